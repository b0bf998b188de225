//! Who may do what.

pub mod oauth;
