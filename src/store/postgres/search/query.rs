//! The query on PostgreSQL: the FTS5 expression `search::compile` writes (a grammar of our own), read back into terms, AND, OR and NOT, and written as a `tsquery` whose operands are quoted words (never the user's syntax).

use anyhow::{Result, bail};

use crate::store::postgres::words::{phrase, words};

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

    /// The `tsquery` as text, its words split as the vectors' were
    /// ([`phrase`]); `None` when it can match nothing (a term with no
    /// words, as `++`, matches nothing, as on SQLite).
    pub(super) fn tsquery(&self) -> Option<String> {
        match self {
            Expr::Term { text, prefix } => phrase(text, *prefix),
            Expr::And(a, b) => Some(format!("({} & {})", a.tsquery()?, b.tsquery()?)),
            Expr::Or(a, b) => match (a.tsquery(), b.tsquery()) {
                (Some(a), Some(b)) => Some(format!("({a} | {b})")),
                (one, other) => one.or(other),
            },
            Expr::Not(a, b) => match (a.tsquery()?, b.tsquery()) {
                (a, Some(b)) => Some(format!("({a} & !{b})")),
                (a, None) => Some(a),
            },
        }
    }
}

impl Expr {
    /// The terms a hit's snippet marks, as phrases of words (the last a
    /// prefix or not): every term but those a `NOT` excludes.
    pub(super) fn phrases(&self) -> Vec<Phrase> {
        let mut all = Vec::new();
        self.collect_phrases(&mut all);
        all
    }

    fn collect_phrases(&self, all: &mut Vec<Phrase>) {
        match self {
            Expr::Term { text, prefix } => {
                let words = words(text);
                if !words.is_empty() {
                    all.push(Phrase {
                        words,
                        prefix: *prefix,
                    });
                }
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.collect_phrases(all);
                b.collect_phrases(all);
            }
            Expr::Not(a, _) => a.collect_phrases(all),
        }
    }
}

/// A term's words, in order; the last a prefix when `prefix`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Phrase {
    pub(super) words: Vec<String>,
    pub(super) prefix: bool,
}

impl Phrase {
    /// Whether the phrase's word `i` matches the lexeme `word`.
    pub(super) fn matches(&self, i: usize, word: &str) -> bool {
        match self.prefix && i + 1 == self.words.len() {
            true => word.starts_with(self.words[i].as_str()),
            false => word == self.words[i],
        }
    }
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
