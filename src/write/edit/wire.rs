//! The `edit` tool's edits read from a call's JSON, and the JSON Schema that declares them.

use serde_json::{Value, json};

use super::{Edit, EditError, check};

/// The wire shapes, for messages.
const SHAPES: &str = "{replace, with, all?}, {append}, {prepend}, {section, with} or {frontmatter}";

/// The edits of a `tools/call`: a non-empty array of the wire shapes.
pub fn parse(edits: &Value) -> Result<Vec<Edit>, EditError> {
    let Value::Array(list) = edits else {
        return Err(EditError(format!(
            "edits must be an array of edits, each one of {SHAPES}; found {}",
            json_kind(edits)
        )));
    };
    if list.is_empty() {
        return Err(EditError(format!(
            "edits is empty: give at least one edit, each one of {SHAPES}"
        )));
    }
    list.iter()
        .enumerate()
        .map(|(i, value)| {
            parse_one(value)
                .and_then(|edit| check(&edit).map(|()| edit))
                .map_err(|message| EditError(format!("edit #{}: {message}", i + 1)))
        })
        .collect()
}

fn parse_one(value: &Value) -> Result<Edit, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "expected an object, one of {SHAPES}; found {}",
            json_kind(value)
        ));
    };
    let verbs: Vec<&str> = ["replace", "append", "prepend", "section", "frontmatter"]
        .into_iter()
        .filter(|verb| object.contains_key(*verb))
        .collect();
    let verb = match verbs.as_slice() {
        [verb] => *verb,
        [] => {
            let keys: Vec<&str> = object.keys().map(String::as_str).collect();
            return Err(format!(
                "expected one of {SHAPES}; found keys: {}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ));
        }
        many => {
            return Err(format!(
                "one edit per object: found {}; give them as separate edits",
                many.join(" and ")
            ));
        }
    };
    let a = if verb.starts_with('a') { "an" } else { "a" };
    let allowed: &[&str] = match verb {
        "replace" => &["replace", "with", "all"],
        "section" => &["section", "with"],
        _ => &[verb],
    };
    if let Some(extra) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {extra:?} in {a} {verb} edit, which takes only {}",
            allowed.join(", ")
        ));
    }
    let text = |key: &str| -> Result<String, String> {
        match object.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "{key:?} of {a} {verb} edit must be a string; found {}",
                json_kind(other)
            )),
            None => Err(format!(
                "{a} {verb} edit needs {key:?} (the new text; \"\" for none)"
            )),
        }
    };
    Ok(match verb {
        "replace" => Edit::Replace {
            old: text("replace")?,
            with: text("with")?,
            all: match object.get("all") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(all)) => *all,
                Some(other) => {
                    return Err(format!(
                        "\"all\" must be true or false; found {}",
                        json_kind(other)
                    ));
                }
            },
        },
        "append" => Edit::Append(text("append")?),
        "prepend" => Edit::Prepend(text("prepend")?),
        "section" => Edit::Section {
            heading: text("section")?,
            with: text("with")?,
        },
        _ => match &object["frontmatter"] {
            Value::Object(keys) => Edit::Frontmatter(
                keys.iter()
                    .map(|(key, value)| (key.clone(), Some(value.clone()).filter(|v| !v.is_null())))
                    .collect(),
            ),
            other => {
                return Err(format!(
                    "\"frontmatter\" must be an object of keys to set (null removes one); found {}",
                    json_kind(other)
                ));
            }
        },
    })
}

/// The JSON Schema of the `edits` array, for the tool's `inputSchema`.
pub fn edits_schema() -> Value {
    let text = |description: &str| json!({"type": "string", "description": description});
    json!({
        "type": "array",
        "minItems": 1,
        "description": "Applied in order, each to the result of the one before; all or none.",
        "items": {
            "oneOf": [
                {
                    "type": "object",
                    "description": "Replace text that occurs exactly once (or every occurrence with all: true).",
                    "properties": {
                        "replace": {"type": "string", "minLength": 1, "description": "The exact text to find, whitespace included."},
                        "with": text("The new text (\"\" deletes)."),
                        "all": {"type": "boolean", "description": "Replace every occurrence (default false: OLD must occur once)."}
                    },
                    "required": ["replace", "with"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Add text at the end, on a line of its own.",
                    "properties": {"append": {"type": "string", "minLength": 1}},
                    "required": ["append"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Add text at the start, after the frontmatter block.",
                    "properties": {"prepend": {"type": "string", "minLength": 1}},
                    "required": ["prepend"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Replace the body of a section (the heading line stays), up to the next heading of the same or a higher level.",
                    "properties": {
                        "section": {"type": "string", "minLength": 1, "description": "The heading's text, or a path `Parent > Child`."},
                        "with": text("The section's new body.")
                    },
                    "required": ["section", "with"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "description": "Set frontmatter keys, or remove them with null; only their lines change.",
                    "properties": {
                        "frontmatter": {
                            "type": "object",
                            "minProperties": 1,
                            "propertyNames": {"pattern": "^[A-Za-z0-9_.-]+$"}
                        }
                    },
                    "required": ["frontmatter"],
                    "additionalProperties": false
                }
            ]
        }
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
