//! The write tools (`create`, `write`, `edit`, `move`, `delete`): their declarations, their arguments read into a `write::Request`, and the answer in each protocol version's shape. What a write does is `write`'s; this module only speaks MCP.
//!
//! They are declared only by a server that may write (one that knows its
//! project folder, not `--read-only`, and over HTTP only with a token); a
//! call on any other server is a tool error that says why.

use rmcp::model::{CallToolResult, Resource, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::read::{integer, string};
use super::{failed, object, unknown_arguments};
use crate::access::{Grants, Verb};
use crate::doc::{ChangeKind, DocKey, Prefix};
use crate::mcp::{Caller, MIME_TYPE, icons};
use crate::search::Under;
use crate::uri;
use crate::write::edit;
use crate::write::{Refused, Request, Written};

pub const CREATE: &str = "create";
pub const WRITE: &str = "write";
pub const EDIT: &str = "edit";
pub const MOVE: &str = "move";
pub const DELETE: &str = "delete";

/// Every write tool's name.
pub const NAMES: [&str; 5] = [CREATE, WRITE, EDIT, MOVE, DELETE];

const IF_VERSION: &str = "The version your change is based on (from read, list, search or resources/read: `version`, or _meta orchestra/version). \
Pass it: if the document changed since, nothing is written and the answer says so; read it again and redo your change.";

fn declared(name: &str, title: &str, description: &str, input: Value, destructive: bool) -> Tool {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(false);
    annotations.destructive_hint = Some(destructive);
    // The same call twice: the second is refused (create, move) or changes
    // nothing more (write), but edits like append do it again.
    annotations.idempotent_hint = Some(false);
    annotations.open_world_hint = Some(false);
    let mut tool = Tool::new(
        name.to_string(),
        description.to_string(),
        std::sync::Arc::new(object(input)),
    )
    .with_title(title)
    .with_annotations(annotations);
    tool.output_schema = Some(std::sync::Arc::new(object(output_schema())));
    tool
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "version": {"type": "integer"},
            "hash": {"type": "string"},
            "size": {"type": "integer"},
            "diff": {"type": "string"},
            "dryRun": {"type": "boolean"},
            "movedFrom": {"type": "string"},
            "removed": {"type": "boolean"},
        },
        "required": ["uri", "size", "diff"],
    })
}

pub fn tools() -> Vec<Tool> {
    let uri = json!({"type": "string", "description": "The document: orchestra://{prefix}/{id}."});
    let if_version = json!({"type": "integer", "minimum": 1, "description": IF_VERSION});
    vec![
        declared(
            CREATE,
            "Create a document",
            "Create a new Markdown document of the backlog, written to the project's files. Give its uri, or `under` \
             (a prefix or folder: features, notes, docs, docs/adr) to get the next id of that folder (FEAT-012 → FEAT-013; \
             else a slug of `title`): the answer says which uri it got. Refused when the document exists.",
            json!({
                "type": "object",
                "properties": {
                    "uri": uri,
                    "under": {"type": "string", "description": "A prefix or folder to allocate the id in, instead of uri."},
                    "title": {"type": "string", "description": "For `under`: the slug of the id when the folder's documents are not numbered (or follow the number, as in docs/adr/0007-title)."},
                    "content": {"type": "string", "description": "The document's whole text (Markdown, frontmatter included)."},
                },
                "required": ["content"],
                "additionalProperties": false,
            }),
            false,
        ),
        declared(
            WRITE,
            "Replace a document",
            "Replace a document's whole text. Read all of it first (never from a truncated part), and pass ifVersion. \
             To change part of a document, prefer edit.",
            json!({
                "type": "object",
                "properties": {
                    "uri": uri,
                    "content": {"type": "string", "description": "The new whole text."},
                    "ifVersion": if_version,
                },
                "required": ["uri", "content"],
                "additionalProperties": false,
            }),
            true,
        ),
        declared(
            EDIT,
            "Edit a document",
            "Change part of a document: replace a text that occurs once (or every time, with all), append, prepend \
             (after the frontmatter), replace a section's body (under a heading; `Parent > Child` for a nested one), \
             or set and remove frontmatter keys. Every edit applies or none does; every byte outside them stays as it was. \
             Pass ifVersion; dryRun shows the diff and writes nothing.",
            json!({
                "type": "object",
                "properties": {
                    "uri": uri,
                    "edits": edit::edits_schema(),
                    "ifVersion": if_version,
                    "dryRun": {"type": "boolean", "default": false, "description": "Only show the unified diff; write nothing."},
                },
                "required": ["uri", "edits"],
                "additionalProperties": false,
            }),
            true,
        ),
        declared(
            MOVE,
            "Move a document",
            "Rename a document (its file) to another uri, creating folders. Refused when the target exists. Its history \
             stays readable under both uris. Pass ifVersion.",
            json!({
                "type": "object",
                "properties": {
                    "uri": uri,
                    "to": {"type": "string", "description": "The new uri: orchestra://{prefix}/{id}."},
                    "ifVersion": if_version,
                },
                "required": ["uri", "to"],
                "additionalProperties": false,
            }),
            true,
        ),
        declared(
            DELETE,
            "Delete a document",
            "Remove a document's file. Its history stays readable (history, resources/read of ?version=N). Pass ifVersion.",
            json!({
                "type": "object",
                "properties": {
                    "uri": uri,
                    "ifVersion": if_version,
                },
                "required": ["uri"],
                "additionalProperties": false,
            }),
            true,
        ),
    ]
}

/// A write tool's call: `Err` only for what the server could not do (the
/// disk, the database); a refusal or a bad argument is a tool error.
pub fn call(
    ctx: &Caller,
    protocol: &str,
    name: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<CallToolResult> {
    let writer = match ctx.writer() {
        Ok(writer) => writer,
        Err(why) => return Ok(failed(why)),
    };
    let lacking = unwritable(name, arguments, ctx.grants);
    if !lacking.is_empty() {
        return Ok(failed(format!(
            "this credential may not write there: it needs {}",
            lacking.join(" ")
        )));
    }
    let request = match request(name, arguments) {
        Ok(request) => request,
        Err(message) => return Ok(failed(message)),
    };
    match writer.apply(request)? {
        Ok(written) => Ok(answer(protocol, &written)),
        Err(Refused(message)) => Ok(failed(message)),
    }
}

/// The scopes `name`'s call lacks for the documents it names: a write
/// scope on each one's prefix that the caller may not write. A create
/// `under` a folder needs it whole. Reads only the call's names, never its
/// content: the HTTP layer asks it of every write before the call runs.
pub fn unwritable(name: &str, arguments: &Map<String, Value>, grants: &Grants) -> Vec<String> {
    let Ok(targets) = targets(name, arguments) else {
        // The call itself says what is wrong with its arguments.
        return Vec::new();
    };
    let writes = grants.areas(Verb::Write);
    let mut prefixes: Vec<Prefix> = Vec::new();
    for target in targets {
        let (prefix, allowed) = match &target {
            Target::Key(key) => (key.prefix, writes.contains(key)),
            Target::Folder(area) => (area.prefix, writes.covers(area)),
        };
        if !allowed && !prefixes.contains(&prefix) {
            prefixes.push(prefix);
        }
    }
    prefixes
        .into_iter()
        .map(|prefix| format!("{}:{prefix}", Verb::Write.scope()))
        .collect()
}

/// What a write call changes: a document, or the folder a create
/// allocates an id in.
enum Target {
    Key(DocKey),
    Folder(Under),
}

/// The targets of `name`'s call, parsed as [`request`] parses them; none
/// for a create that names neither or both (it is refused as it runs).
fn targets(name: &str, arguments: &Map<String, Value>) -> Result<Vec<Target>, String> {
    Ok(match name {
        CREATE => match (arguments.contains_key("uri"), string(arguments, "under")?) {
            (true, None) => vec![Target::Key(key(arguments, "uri")?)],
            (false, Some(under)) => {
                let (prefix, folder) = parse_under(under)?;
                let folder =
                    (!folder.is_empty()).then(|| format!("{}/", folder.trim_end_matches('/')));
                vec![Target::Folder(Under { prefix, folder })]
            }
            _ => Vec::new(),
        },
        MOVE => vec![
            Target::Key(key(arguments, "uri")?),
            Target::Key(key(arguments, "to")?),
        ],
        _ => vec![Target::Key(key(arguments, "uri")?)],
    })
}

fn key(arguments: &Map<String, Value>, name: &str) -> Result<DocKey, String> {
    let text = string(arguments, name)?
        .ok_or_else(|| format!("{name} is required: orchestra://{{prefix}}/{{id}}"))?;
    uri::parse(text).map_err(|e| format!("invalid {name}: {e}"))
}

fn if_version(arguments: &Map<String, Value>) -> Result<Option<u32>, String> {
    match integer(arguments, "ifVersion", 1)? {
        None => Ok(None),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| "ifVersion is too large".to_string()),
    }
}

fn content(arguments: &Map<String, Value>) -> Result<String, String> {
    string(arguments, "content")?
        .map(str::to_string)
        .ok_or_else(|| "content is required: the document's whole text".to_string())
}

fn request(name: &str, arguments: &Map<String, Value>) -> Result<Request, String> {
    Ok(match name {
        CREATE => {
            unknown_arguments(arguments, &["uri", "under", "title", "content"])?;
            let under = string(arguments, "under")?;
            let key = match (arguments.contains_key("uri"), under) {
                (true, Some(_)) => return Err("give uri or under, not both".into()),
                (true, None) => Some(key(arguments, "uri")?),
                (false, _) => None,
            };
            let under = under.map(parse_under).transpose()?;
            Request::Create {
                key,
                under,
                title: string(arguments, "title")?.map(str::to_string),
                content: content(arguments)?,
            }
        }
        WRITE => {
            unknown_arguments(arguments, &["uri", "content", "ifVersion"])?;
            Request::Write {
                key: key(arguments, "uri")?,
                content: content(arguments)?,
                if_version: if_version(arguments)?,
            }
        }
        EDIT => {
            unknown_arguments(arguments, &["uri", "edits", "ifVersion", "dryRun"])?;
            let edits = arguments
                .get("edits")
                .ok_or("edits is required: a list of edits")?;
            let dry_run = match arguments.get("dryRun") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("dryRun must be true or false".into()),
            };
            Request::Edit {
                key: key(arguments, "uri")?,
                edits: edit::parse(edits).map_err(|e| e.to_string())?,
                if_version: if_version(arguments)?,
                dry_run,
            }
        }
        MOVE => {
            unknown_arguments(arguments, &["uri", "to", "ifVersion"])?;
            Request::Move {
                key: key(arguments, "uri")?,
                to: key(arguments, "to")?,
                if_version: if_version(arguments)?,
            }
        }
        DELETE => {
            unknown_arguments(arguments, &["uri", "ifVersion"])?;
            Request::Delete {
                key: key(arguments, "uri")?,
                if_version: if_version(arguments)?,
            }
        }
        other => unreachable!("{other} is not a write tool"),
    })
}

/// `features` or `docs/adr`: a prefix, and a folder of it (`""` for the
/// prefix itself).
fn parse_under(under: &str) -> Result<(Prefix, String), String> {
    let under = under.trim_matches('/');
    let (prefix, folder) = under.split_once('/').unwrap_or((under, ""));
    let prefix = Prefix::parse(prefix).ok_or_else(|| {
        format!("under must start with a prefix (features, notes or docs), not {under:?}")
    })?;
    if !folder.is_empty() && !crate::doc::is_valid_id(folder) {
        return Err(format!(
            "{folder:?} cannot be a folder of {}",
            prefix.as_str()
        ));
    }
    Ok((prefix, folder.to_string()))
}

fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn answer(protocol: &str, written: &Written) -> CallToolResult {
    let name = uri::format(&written.key);
    let version = written
        .version
        .map_or(String::new(), |v| format!(" (version {v})"));
    let text = match (written.dry_run, written.change, &written.moved_from) {
        (true, ..) => format!(
            "Dry run: nothing was written. The change to {name}:\n{}",
            written.diff
        ),
        (false, _, Some(from)) => format!("Moved {} to {name}{version}.", uri::format(from)),
        (false, ChangeKind::New, None) => {
            format!("Created {name}{version}, {} bytes.", written.size)
        }
        (false, ChangeKind::Updated, None) => {
            format!("Wrote {name}{version}, {} bytes.", written.size)
        }
        (false, ChangeKind::Removed, None) => {
            format!("Deleted {name}; its history stays readable{version}.")
        }
    };
    let mut structured = json!({
        "uri": name,
        "size": written.size,
        "diff": written.diff,
    });
    if let Some(version) = written.version {
        structured["version"] = version.into();
    }
    if let Some(hash) = &written.hash {
        structured["hash"] = hex(hash).into();
    }
    if written.dry_run {
        structured["dryRun"] = true.into();
    }
    if let Some(from) = &written.moved_from {
        structured["movedFrom"] = uri::format(from).into();
    }
    if written.change == ChangeKind::Removed {
        structured["removed"] = true.into();
    }
    let links = match written.change {
        ChangeKind::Removed => Vec::new(),
        _ => vec![
            Resource::new(name.clone(), written.key.id.clone())
                .with_mime_type(MIME_TYPE)
                .with_size(written.size)
                .with_icons(icons::of(written.key.prefix)),
        ],
    };
    super::result(protocol, text, links, structured)
}
