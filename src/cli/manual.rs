//! `orchestra completions SHELL` and `orchestra man`: the shell completion scripts (`clap_complete`) and one manual page of every command (`clap_mangen`), both made from the command line's own definition and written to stdout.
//!
//! The manual is one page, `orchestra(1)`, as ripgrep's is: the top
//! command's sections, then a COMMANDS section with each subcommand's
//! synopsis, description and options under a heading of its own, so that
//! `man orchestra` answers for every command and installing it is one file.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;
use clap_mangen::Man;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell whose completion script to print.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script of `args.shell` for `cmd`.
pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "orchestra", &mut out);
    write_stdout(&out)
}

/// Prints the manual page of `cmd` and of each of its subcommands.
pub fn man(cmd: clap::Command) -> Result<()> {
    write_stdout(&page(cmd)?)
}

/// The roff text of the one page.
fn page(mut cmd: clap::Command) -> Result<Vec<u8>> {
    // Built first, so that each subcommand knows its whole name
    // (`orchestra import`) for its synopsis.
    cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let top = Man::new(cmd.clone());
    let mut out = Vec::new();
    top.render_title(&mut out)?;
    top.render_name_section(&mut out)?;
    top.render_synopsis_section(&mut out)?;
    top.render_description_section(&mut out)?;
    top.render_options_section(&mut out)?;
    writeln!(out, ".SH COMMANDS")?;
    for sub in cmd.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name());
        writeln!(out, ".SS \"{}\"", roff_quoted(name))?;
        let man = Man::new(sub.clone());
        out.extend(body(|w| man.render_synopsis_section(w))?);
        out.extend(body(|w| man.render_description_section(w))?);
        if sub.get_arguments().any(|arg| !arg.is_hide_set()) {
            writeln!(out, ".PP\n\\fIOptions:\\fR")?;
            out.extend(body(|w| man.render_options_section(w))?);
        }
    }
    top.render_version_section(&mut out)?;
    Ok(out)
}

/// A section clap_mangen renders, without its `.SH` headings: it becomes
/// part of a subcommand's subsection.
fn body(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<Vec<u8>> {
    let mut rendered = Vec::new();
    render(&mut rendered)?;
    let text = String::from_utf8(rendered).context("clap_mangen wrote roff that is not UTF-8")?;
    let mut out = Vec::new();
    for line in text.lines().filter(|line| !line.starts_with(".SH")) {
        writeln!(out, "{line}")?;
    }
    Ok(out)
}

/// `text` inside a roff macro's double-quoted argument.
fn roff_quoted(text: &str) -> String {
    text.replace('\\', "\\e")
        .replace('"', "\\(dq")
        .replace('-', "\\-")
}

/// A closed pipe (`orchestra man | head`) is not an error.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        #[derive(clap::Parser)]
        #[command(name = "demo", version = "1.0", about = "A demo")]
        struct Demo {
            #[command(subcommand)]
            command: Sub,
        }
        #[derive(clap::Subcommand)]
        enum Sub {
            /// Load the things.
            Load {
                /// Where from.
                #[arg(long)]
                from: String,
            },
            /// Print the rest.
            Rest,
        }
        <Demo as clap::CommandFactory>::command()
    }

    #[test]
    fn the_page_has_every_command_under_its_own_heading() {
        let page = String::from_utf8(page(command()).unwrap()).unwrap();
        let headings: Vec<&str> = page.lines().filter(|l| l.starts_with(".S")).collect();
        assert_eq!(
            headings,
            [
                ".SH NAME",
                ".SH SYNOPSIS",
                ".SH DESCRIPTION",
                ".SH OPTIONS",
                ".SH COMMANDS",
                ".SS \"demo load\"",
                ".SS \"demo rest\"",
                ".SH VERSION",
            ]
        );
        assert!(page.contains("Load the things"), "{page}");
        assert!(page.contains("\\-\\-from"), "{page}");
        assert!(page.contains("Where from"), "{page}");
    }
}
