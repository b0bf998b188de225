//! The `search` tool: its declaration, its arguments, and its result in the shape each protocol version knows.

use std::sync::Arc;

use rmcp::model::{CallToolResult, Resource, Tool};
use serde_json::{Map, Value, json};

use super::{failed, object, result};
use crate::cursor;
use crate::mcp::{Caller, MIME_TYPE, icons};
use crate::search::{self, Filter, Search, SearchError, Under};
use crate::store::SearchPage;
use crate::uri;

pub const SEARCH: &str = "search";

const DESCRIPTION: &str = "Find documents of this project's backlog (features, notes, docs) by their words. \
Use it before reading: it answers with ranked links (orchestra:// URIs) with titles and snippets, not bodies; \
read the documents that matter with the read tool (or resources/read), long ones by section after outline; \
the links tool shows what a document links to and which documents link to it. \
Query language: `login code` (both words), `\"sign in\"` (phrase), `sync*` (prefix), `-draft` (without the word), \
`login OR signin` (either); ids and words with punctuation are found as written (`FEAT-0012`, `v2.1`). \
Case and accents never matter. \
A question in plain words that no document answers with all of its words is answered with the documents that hold some of them, \
best first (`relaxed: true`); a long query (a pasted sentence or error message) is answered from its 32 rarest words, named in `terms`. \
`under` restricts to a prefix or a folder (`features`, `docs/adr`); \
`where` to frontmatter values (`{\"status\": \"open\"}`; a list field matches when one item equals the value). \
An empty query with filters lists the matching documents in key order.";

/// The tool's declaration.
pub fn tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "maxLength": search::MAX_QUERY_BYTES,
                "description": "Words to find: `login code`, `\"sign in\"`, `sync*`, `-draft`, `login OR signin`. May be empty when `under` or `where` is given.",
            },
            "under": {
                "type": "string",
                "description": "Only documents under this prefix or folder: `features`, `notes`, `docs`, `docs/adr`.",
            },
            "where": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Frontmatter equalities that must all hold, e.g. {\"status\": \"open\", \"tags\": \"sync\"}.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": search::MAX_LIMIT,
                "default": search::DEFAULT_LIMIT,
                "description": "Hits per page.",
            },
            "cursor": {
                "type": "string",
                "description": "The nextCursor of the previous page of the same search.",
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "hits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "uri": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "snippet": {"type": "string"},
                        "score": {"type": "number"},
                        "version": {"type": "integer"},
                    },
                    "required": ["uri", "title", "snippet", "score"],
                },
            },
            "total": {"type": "integer", "minimum": 0},
            "nextCursor": {"type": "string"},
            "relaxed": {
                "type": "boolean",
                "description": "Present and true when no document holds all of the query's words: the hits hold some of them.",
            },
            "terms": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Present when the query had more terms than a search uses: the terms it was answered from.",
            },
        },
        "required": ["hits", "total"],
    });
    let mut tool = Tool::new(SEARCH, DESCRIPTION, Arc::new(object(input)))
        .with_title("Search the backlog")
        .with_annotations(super::read_only());
    tool.output_schema = Some(Arc::new(object(output)));
    tool
}

/// A `search` call: a page of hits, or a tool error saying what to change.
pub fn call(
    ctx: &Caller,
    version: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    Ok(match Arguments::parse(arguments) {
        Err(message) => failed(message),
        Ok(args) => match run(ctx, &args.search, args.limit, args.cursor.as_deref())? {
            Err(e) => failed(e.to_string()),
            Ok(page) => answer(&args, &page, version),
        },
    })
}

/// The arguments of a `search` call, checked.
struct Arguments {
    search: Search,
    limit: usize,
    cursor: Option<String>,
}

impl Arguments {
    /// Every message says what to change.
    fn parse(arguments: &Map<String, Value>) -> Result<Arguments, String> {
        let mut query = None;
        let mut under = None;
        let mut filters = Vec::new();
        let mut limit = search::DEFAULT_LIMIT;
        let mut cursor = None;
        for (name, value) in arguments {
            match (name.as_str(), value) {
                ("query", Value::String(q)) => query = Some(q.clone()),
                ("under", Value::String(u)) => {
                    under = Some(Under::parse(u).map_err(|e| e.to_string())?)
                }
                ("under", Value::Null) | ("cursor", Value::Null) | ("limit", Value::Null) => {}
                ("where", Value::Object(pairs)) => {
                    for (key, value) in pairs {
                        let value = match value {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                return Err(format!(
                                    "where.{key} must be a string (the YAML text of the value), not {}",
                                    kind(value)
                                ));
                            }
                        };
                        if key.is_empty() {
                            return Err("where keys must not be empty".to_string());
                        }
                        filters.push(Filter {
                            name: key.clone(),
                            value,
                        });
                    }
                }
                ("limit", Value::Number(n)) => {
                    limit = n
                        .as_i64()
                        .ok_or_else(|| SearchError::Limit(n.to_string()))
                        .and_then(search::limit)
                        .map_err(|e| e.to_string())?;
                }
                ("cursor", Value::String(c)) => cursor = Some(c.clone()),
                ("query" | "under" | "cursor", other) => {
                    return Err(format!("{name} must be a string, not {}", kind(other)));
                }
                ("where", other) => {
                    return Err(format!(
                        "where must be an object of KEY: VALUE strings, e.g. {{\"status\": \"open\"}}, not {}",
                        kind(other)
                    ));
                }
                ("limit", other) => {
                    return Err(format!(
                        "limit must be an integer from 1 to {}, not {}",
                        search::MAX_LIMIT,
                        kind(other)
                    ));
                }
                (other, _) => {
                    return Err(format!(
                        "unknown argument {other:?}: search takes query, under, where, limit and cursor"
                    ));
                }
            }
        }
        let query = query
            .ok_or("query is required: a string, empty to list what under and where select")?;
        let search = Search::new(query, under, filters).map_err(|e| e.to_string())?;
        Ok(Arguments {
            search,
            limit,
            cursor,
        })
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The page asked for, or why the arguments cannot give one. A database
/// failure is an error of the request, not of the tool. Blocking.
pub fn run(
    ctx: &Caller,
    search: &Search,
    limit: usize,
    cursor: Option<&str>,
) -> anyhow::Result<Result<SearchPage, SearchError>> {
    let resume = match cursor {
        None => None,
        Some(c) => match cursor::decode_search(c, &search.fingerprint()) {
            Ok(resume) => Some(resume),
            Err(e) => return Ok(Err(SearchError::from(e))),
        },
    };
    let page = match ctx.store() {
        Some(store) => {
            let reader = store.search_reader()?;
            // The hits' versions, as they are now (for a write's
            // ifVersion): after the page, one point read each.
            let mut page = reader.search(search, resume.as_ref(), limit)?;
            let keys: Vec<&crate::doc::DocKey> = page.hits.iter().map(|h| &h.key).collect();
            let versions = reader.versions_of(&keys)?;
            for (hit, version) in page.hits.iter_mut().zip(versions) {
                hit.version = version;
            }
            page
        }
        None => SearchPage::default(),
    };
    Ok(Ok(page))
}

/// The hits as `structuredContent` (JSON).
pub fn structured(page: &SearchPage, fingerprint: &[u8; 8]) -> Value {
    let hits: Vec<Value> = page
        .hits
        .iter()
        .map(|hit| {
            let mut object = json!({
                "uri": uri::format(&hit.key),
                "title": hit.title,
                "snippet": hit.snippet,
                "score": hit.score,
            });
            if let Some(description) = &hit.description {
                object["description"] = Value::from(description.clone());
            }
            if let Some(version) = hit.version {
                object["version"] = Value::from(version);
            }
            object
        })
        .collect();
    let mut value = json!({ "hits": hits, "total": page.total });
    if let Some(next) = &page.next {
        value["nextCursor"] = Value::from(cursor::encode_search(fingerprint, next));
    }
    if page.relaxed {
        value["relaxed"] = Value::Bool(true);
    }
    if let Some(terms) = &page.terms {
        value["terms"] = json!(terms);
    }
    value
}

fn answer(args: &Arguments, page: &SearchPage, version: &str) -> CallToolResult {
    let structured = structured(page, &args.search.fingerprint());
    let text = text(
        args,
        page,
        structured.get("nextCursor").and_then(Value::as_str),
    );
    let links = page
        .hits
        .iter()
        .map(|hit| {
            let mut link = Resource::new(uri::format(&hit.key), hit.key.id.clone())
                .with_title(hit.title.clone())
                .with_mime_type(MIME_TYPE)
                .with_size(hit.size)
                .with_icons(icons::of(hit.key.prefix));
            link.description = hit.description.clone();
            link
        })
        .collect();
    result(version, text, links, structured)
}

/// The hits as text, for clients that show only text.
fn text(args: &Arguments, page: &SearchPage, next: Option<&str>) -> String {
    let mut text = String::new();
    let query = &args.search.query;
    let what = if query.trim().is_empty() {
        "documents".to_string()
    } else {
        format!("hits for {query:?}")
    };
    let how = search::how_answered(&args.search, page.terms.as_deref(), page.relaxed);
    if !how.is_empty() {
        text.push_str(&how);
        text.push('\n');
    }
    if page.hits.is_empty() {
        text.push_str(&format!("No {what}."));
        return text;
    }
    text.push_str(&format!(
        "{} {what}; {} on this page:\n",
        page.total,
        page.hits.len()
    ));
    for hit in &page.hits {
        text.push_str(&format!("{} — {}", uri::format(&hit.key), hit.title));
        if !hit.snippet.is_empty() {
            text.push_str(" — ");
            text.push_str(&hit.snippet);
        }
        text.push('\n');
    }
    match next {
        Some(cursor) => text.push_str(&format!(
            "More: call search again with the same arguments and cursor {cursor:?}."
        )),
        None => {
            text.push_str("Read a document with the read tool (or resources/read) and its URI.")
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arguments: Value) -> Result<Arguments, String> {
        Arguments::parse(&object(arguments))
    }

    #[test]
    fn arguments_that_are_refused_say_what_to_change() {
        let refused = |arguments: Value, says: &str| {
            let message = parse(arguments.clone()).err().unwrap_or_default();
            assert!(message.contains(says), "{arguments}: {message}");
        };
        refused(json!({}), "query is required");
        refused(json!({"query": 3}), "query must be a string");
        refused(json!({"query": "x", "limit": 0}), "from 1 to 100");
        refused(json!({"query": "x", "limit": 101}), "from 1 to 100");
        refused(json!({"query": "x", "limit": 2.5}), "from 1 to 100");
        refused(
            json!({"query": "x", "limit": "5"}),
            "limit must be an integer",
        );
        refused(
            json!({"query": "x", "under": "featurez"}),
            "names no prefix",
        );
        refused(
            json!({"query": "x", "where": "status=open"}),
            "where must be an object",
        );
        refused(
            json!({"query": "x", "where": {"tags": ["a"]}}),
            "where.tags must be a string",
        );
        refused(json!({"query": "x", "max": 1}), "unknown argument \"max\"");
        refused(json!({"query": "x".repeat(4097)}), "at most 4096 bytes");
    }

    #[test]
    fn arguments_that_are_accepted() {
        let args = parse(
            json!({"query": "x", "where": {"points": 3, "done": false, "s": "open"},
                                "under": "docs/adr", "limit": 100, "cursor": null}),
        )
        .unwrap();
        assert_eq!(args.limit, 100);
        let values: Vec<&str> = args
            .search
            .filters
            .iter()
            .map(|f| f.value.as_str())
            .collect();
        assert_eq!(values, ["false", "3", "open"]);
        assert_eq!(
            args.search.under.map(|u| u.to_string()).as_deref(),
            Some("docs/adr")
        );
    }

    #[test]
    fn cursor_errors_are_tool_errors() {
        let other = cursor::encode_search(&[0; 8], &crate::cursor::SearchResume::Offset(20));
        let error = cursor::decode_search(&other, &[1; 8]).unwrap_err();
        assert_eq!(error, cursor::CursorError::OtherSearch);
        assert!(
            SearchError::from(error)
                .to_string()
                .contains("another search")
        );
    }
}
