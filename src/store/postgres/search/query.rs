//! The query on PostgreSQL: the FTS5 expression `search::compile` writes (a grammar of our own), read back into terms, AND, OR and NOT, and built into a `tsquery` from bound values.

use anyhow::{Result, bail};

use super::Params;
use crate::doc::Prefix;

/// A query as `search::compile` writes it for FTS5, read back.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    Term {
        text: String,
        prefix: bool,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// Matches the first and not the second.
    Not(Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Term { text: String, prefix: bool },
    And,
    Or,
    Not,
    Open,
    Close,
}

impl Expr {
    /// Reads an expression of `compile`'s grammar. Anything else is a bug
    /// there, reported rather than guessed at.
    pub(super) fn parse(fts: &str) -> Result<Expr> {
        let tokens = tokens(fts)?;
        let mut at = 0;
        let expr = or(&tokens, &mut at)?;
        if at != tokens.len() {
            bail!("cannot read the compiled query {fts:?}");
        }
        Ok(expr)
    }

    /// The SQL of the `tsquery`, every term a bound value.
    pub(super) fn sql(&self, params: &mut Params) -> String {
        match self {
            Expr::Term { text, prefix } => {
                let mut alternatives = vec![term(text, *prefix, params)];
                // A key is one token, `prefix/id`: a term that may be an id
                // also matches it whole.
                if !text.contains(char::is_whitespace) {
                    for p in Prefix::ALL {
                        alternatives.push(term(&format!("{p}/{text}"), *prefix, params));
                    }
                }
                format!("({})", alternatives.join(" || "))
            }
            Expr::And(a, b) => format!("({} && {})", a.sql(params), b.sql(params)),
            Expr::Or(a, b) => format!("({} || {})", a.sql(params), b.sql(params)),
            Expr::Not(a, b) => format!("({} && !!{})", a.sql(params), b.sql(params)),
        }
    }
}

/// One term as a `tsquery`: its words in sequence, parsed as the vector's
/// text was; a prefix term's as prefixes.
pub(super) fn term(text: &str, prefix: bool, params: &mut Params) -> String {
    if !prefix {
        return format!(
            "phraseto_tsquery('orchestra', {})",
            params.bind(text.to_string())
        );
    }
    // One quoted operand of `to_tsquery`, whatever the text holds: inside
    // quotes `'` is doubled and `\` escapes the next character.
    let mut operand = String::with_capacity(text.len() + 4);
    operand.push('\'');
    for c in text.chars() {
        match c {
            '\'' => operand.push_str("''"),
            '\\' => operand.push_str("\\\\"),
            c => operand.push(c),
        }
    }
    operand.push_str("':*");
    format!("to_tsquery('orchestra', {})", params.bind(operand))
}

pub(super) fn tokens(fts: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = fts.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '*' => match tokens.last_mut() {
                Some(Token::Term { prefix, .. }) if !*prefix => *prefix = true,
                _ => bail!("cannot read the compiled query {fts:?}: a stray *"),
            },
            '"' => {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some('"') if chars.next_if_eq(&'"').is_some() => text.push('"'),
                        Some('"') => break,
                        Some(c) => text.push(c),
                        None => bail!("cannot read the compiled query {fts:?}: an open quote"),
                    }
                }
                tokens.push(Token::Term {
                    text,
                    prefix: false,
                });
            }
            c if c.is_ascii_uppercase() => {
                let mut word = String::from(c);
                while let Some(c) = chars.next_if(char::is_ascii_uppercase) {
                    word.push(c);
                }
                tokens.push(match word.as_str() {
                    "AND" => Token::And,
                    "OR" => Token::Or,
                    "NOT" => Token::Not,
                    _ => bail!("cannot read the compiled query {fts:?}: {word}"),
                });
            }
            c => bail!("cannot read the compiled query {fts:?}: {c:?}"),
        }
    }
    Ok(tokens)
}

// FTS5's precedence, loosest first: OR, AND, NOT. (`compile` puts
// parentheses wherever it matters.)
pub(super) fn or(tokens: &[Token], at: &mut usize) -> Result<Expr> {
    let mut expr = and(tokens, at)?;
    while tokens.get(*at) == Some(&Token::Or) {
        *at += 1;
        expr = Expr::Or(Box::new(expr), Box::new(and(tokens, at)?));
    }
    Ok(expr)
}

pub(super) fn and(tokens: &[Token], at: &mut usize) -> Result<Expr> {
    let mut expr = not(tokens, at)?;
    while tokens.get(*at) == Some(&Token::And) {
        *at += 1;
        expr = Expr::And(Box::new(expr), Box::new(not(tokens, at)?));
    }
    Ok(expr)
}

pub(super) fn not(tokens: &[Token], at: &mut usize) -> Result<Expr> {
    let mut expr = primary(tokens, at)?;
    while tokens.get(*at) == Some(&Token::Not) {
        *at += 1;
        expr = Expr::Not(Box::new(expr), Box::new(primary(tokens, at)?));
    }
    Ok(expr)
}

pub(super) fn primary(tokens: &[Token], at: &mut usize) -> Result<Expr> {
    let token = tokens.get(*at).cloned();
    *at += 1;
    match token {
        Some(Token::Term { text, prefix }) => Ok(Expr::Term { text, prefix }),
        Some(Token::Open) => {
            let expr = or(tokens, at)?;
            if tokens.get(*at) != Some(&Token::Close) {
                bail!("cannot read the compiled query: an unclosed parenthesis");
            }
            *at += 1;
            Ok(expr)
        }
        other => bail!("cannot read the compiled query: {other:?} where a term belongs"),
    }
}
