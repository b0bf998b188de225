"""Interop tests: the `links` tool of `orchestra serve`, through the official Python MCP client
(mcp 2.3.0), in the handshake era ("legacy") and in 2026-07-28, on a SQLite file and on a
PostgreSQL database.

A generated project (deterministic random: features, nested features, notes, docs) holds links of
every kind orchestra reads: `[text](orchestra://…)`, `<orchestra://…>` autolinks, relative links
(`FEAT-002.md`, `./x.md#frag`, `../notes/n01.md`, a percent-encoded one), links from the root
(`/docs/adr/0001.md`), bare mentions of ids (`FEAT-004`, resolved to the first document of that
name in key order), links to documents that do not exist, and the same spellings where they must
not count: code spans, fenced and indented code, the frontmatter, images, link texts, external
links, names no document has, a document's links to itself.

The test keeps the project as a model (each line a list of planted items) and computes the
expected links from it, not from orchestra:

- every document's links (target, line, exists, mention, text) and backlinks (source, line,
  mention, context) equal the model's, whole, paged by `limit: 3` through `nextCursor` across the
  boundary between links and backlinks, and with `direction: "out"` and `"in"` alone;
- a bad cursor, another document's cursor, an unknown or invalid uri and a bad direction are tool
  errors that say what is wrong; the tool is declared read-only;
- after edits (a link removed, a line with a link added above others, a missing document created,
  a document removed) and a re-import under the running server, the same holds for the new model:
  backlinks move, a broken link becomes whole and the mentions of the new name count.
"""

from __future__ import annotations

import posixpath
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent

from test_python_client import BACKENDS, doc_uri, new_db, run_import, with_client

MODES = ["legacy", "2026-07-28"]
SEED = 20261206
PREFIX_ORDER = {"docs": 0, "features": 1, "notes": 2}
FILLER = ["sync", "offline", "queue", "photo", "depot", "valve", "retry", "schema", "ledger", "drain"]
# Links to these stay broken (FEAT-099 is created by the edit test).
MISSING = ["features/FEAT-099", "notes/gone", "docs/adr/0009"]
# Names with an id's shape that no document has: mentions of them are no links.
NAMELESS = ["BUG-042", "TASK-7"]

Key = tuple[str, str]  # (prefix, id)


def key_of(path: str) -> Key:
    prefix, doc_id = path.split("/", 1)
    return prefix, doc_id


def uri_of(key: Key) -> str:
    return doc_uri(*key)


def sort_key(key: Key) -> tuple[int, bytes]:
    return PREFIX_ORDER[key[0]], key[1].encode()


def name_of(doc_id: str) -> str | None:
    """The name a bare mention of the document uses: its last id segment, when shaped LETTERS-DIGITS."""
    last = doc_id.rsplit("/", 1)[-1]
    letters, _, digits = last.partition("-")
    if letters and digits and letters.isascii() and letters.isupper() and letters.isalpha() and digits.isdigit():
        return last
    return None


# --------------------------------------------------------------------------------------
# the model: each document a list of lines, each line a list of items


@dataclass
class Link:
    """A Markdown link or autolink to a document, as one of the spellings below."""

    target: Key
    spelling: str
    label: str


@dataclass
class Mention:
    name: str


Item = str | Link | Mention  # a str is rendered as is and counts for nothing


@dataclass
class Doc:
    key: Key
    frontmatter: list[str]  # raw lines, none of which count
    lines: list[list[Item]] = field(default_factory=list)


def href(source: Key, target: Key, spelling: str) -> str:
    """The destination of a link from `source` to `target`, spelled as `spelling` says."""
    folder = posixpath.join(source[0], *source[1].split("/")[:-1])
    path = f"{target[0]}/{target[1]}.md"
    relative = posixpath.relpath(path, folder)
    match spelling:
        case "uri":
            return uri_of(target)
        case "uri-fragment":
            return uri_of(target) + "#overview"
        case "relative":
            return relative
        case "dot-fragment":
            return (relative if relative.startswith("..") else "./" + relative) + "#context"
        case "root":
            return "/" + path
        case "percent":
            return relative.replace("-", "%2D")
    raise AssertionError(spelling)


SPELLINGS = ["uri", "relative", "autolink", "dot-fragment", "root", "uri-fragment", "percent"]


def render_item(source: Key, item: Item) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mention):
        return item.name
    if item.spelling == "autolink":
        return f"<{uri_of(item.target)}>"
    return f"[{item.label}]({href(source, item.target, item.spelling)})"


def first_line(doc: Doc) -> int:
    """The file's line number of the document's first body line."""
    return len(doc.frontmatter) + 3 if doc.frontmatter else 1


def render(doc: Doc) -> str:
    out = []
    if doc.frontmatter:
        out += ["---", *doc.frontmatter, "---"]
    out += [" ".join(render_item(doc.key, item) for item in line) for line in doc.lines]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Expected:
    """One link as the tool should give it."""

    source: Key
    line: int
    target: Key
    exists: bool
    mention: bool
    text: str
    context: str


def reference(docs: dict[Key, Doc]) -> tuple[dict[Key, list[Expected]], dict[Key, list[Expected]]]:
    """Every present document's links and backlinks, from the model: a link per planted item,
    less a document's links to itself, the mentions of a name no document has, and the same
    target again on a line; a mention links to the first document of its name in key order."""
    first_of: dict[str, Key] = {}
    for key in sorted(docs, key=sort_key):
        name = name_of(key[1])
        if name and name not in first_of:
            first_of[name] = key
    out: dict[Key, list[Expected]] = {}
    for key, doc in docs.items():
        found: list[Expected] = []
        seen: set[tuple[int, str, Any]] = set()
        for number, line in enumerate(doc.lines, start=first_line(doc)):
            context = " ".join(render_item(key, item) for item in line).strip()
            assert len(context.encode()) < 240, context  # orchestra clips longer ones
            for item in line:
                if isinstance(item, Link):
                    if item.target == key:
                        continue
                    tag: tuple[int, str, Any] = (number, "link", item.target)
                    text = uri_of(item.target) if item.spelling == "autolink" else item.label
                    link = Expected(key, number, item.target, item.target in docs, False, text, context)
                elif isinstance(item, Mention):
                    if item.name == name_of(key[1]) or item.name not in first_of:
                        continue
                    tag = (number, "mention", item.name)
                    link = Expected(key, number, first_of[item.name], True, True, item.name, context)
                else:
                    continue
                if tag not in seen:
                    seen.add(tag)
                    found.append(link)
        out[key] = found
    back: dict[Key, list[Expected]] = {key: [] for key in docs}
    for key in sorted(docs, key=sort_key):
        for link in out[key]:
            if link.target in back:
                back[link.target].append(link)
    return out, back


# --------------------------------------------------------------------------------------
# the generated project


DOC_IDS = (
    [f"features/FEAT-{n:03}" for n in range(1, 15)]
    + ["features/sync/FEAT-020", "features/sync/FEAT-021", "features/sync/offline-queue"]
    + [f"notes/n{n:02}" for n in range(1, 9)]
    + ["notes/meetings/2026-01-05", "notes/meetings/2026-01-12", "notes/archive/FEAT-002"]
    + ["docs/guide", "docs/adr/0001", "docs/adr/0002", "docs/adr/0003", "docs/adr/ADR-7"]
    + ["docs/design/sync", "docs/design/api"]
)


def filler(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(n))


def decoys(rng: random.Random, source: Key, targets: list[Key], names: list[str]) -> list[list[Item]]:
    """Lines holding link and mention spellings that must not count (the last kind: a link whose
    text holds a mention, which counts once, as the link)."""
    target = rng.choice(targets)
    name = rng.choice(names)
    link = render_item(source, Link(target, "relative", "x"))
    uri = uri_of(rng.choice(targets))
    kind = rng.randrange(6)
    if kind == 0:
        return [[f"In code: `{name}` and `{link}` and `<{uri}>`, then", filler(rng, 3)]]
    if kind == 1:
        return [[""], ["```md"], [f"{name} {link} <{uri}>"], [f"[y]({uri})"], ["```"], [""]]
    if kind == 2:
        return [[""], [f"    {name} {link}"], [""]]
    if kind == 3:
        return [[f"![{name} picture]({href(source, target, 'relative')}) and [web {name}](https://example.com/{name}.md)"]]
    if kind == 4:
        return [[f"{rng.choice(NAMELESS)} and {name.lower()} and {name.replace('-', '')} are no ids"]]
    # A link whose text holds a mention: the link counts, the mention does not.
    return [[Link(target, "relative", f"{name} in a link's text"), filler(rng, 2)]]


def generate() -> dict[Key, Doc]:
    rng = random.Random(SEED)
    keys = [key_of(path) for path in DOC_IDS]
    targets = keys + [key_of(path) for path in MISSING]
    names = sorted({n for k in keys if (n := name_of(k[1]))}) + ["FEAT-099"]
    docs: dict[Key, Doc] = {}
    spelling = 0
    for key in keys:
        frontmatter = []
        if rng.random() < 0.5:
            frontmatter = [f"title: {key[1]}", f"depends: {rng.choice(names)}", f'see: "[x]({uri_of(rng.choice(keys))})"']
        doc = Doc(key, frontmatter, [[f"# {key[1]}"], [""]])
        for _ in range(rng.randint(4, 12)):
            roll = rng.random()
            if roll < 0.45:
                line: list[Item] = [filler(rng, rng.randint(1, 4))]
                for _ in range(rng.choice([1, 1, 2])):
                    if rng.random() < 0.3:
                        line.append(Mention(rng.choice(names)))
                    else:
                        target = rng.choice(targets)
                        line.append(Link(target, SPELLINGS[spelling % len(SPELLINGS)], filler(rng, 2)))
                        spelling += 1
                    line.append(filler(rng, rng.randint(1, 3)) + rng.choice(["", ",", ".", ";"]))
                doc.lines.append(line)
            elif roll < 0.7:
                doc.lines += decoys(rng, key, targets, names)
            else:
                doc.lines.append([filler(rng, rng.randint(3, 12))])
        docs[key] = doc
    # Spellings the dice may miss: the same target twice on a line (one link), a link and a
    # mention of one document on a line (two), links to itself, the second document of a name.
    feat3, feat4, feat5 = key_of("features/FEAT-003"), key_of("features/FEAT-004"), key_of("features/FEAT-005")
    docs[key_of("notes/n01")].lines.append(
        ["twice:", Link(feat3, "relative", "one"), "and", Link(feat3, "uri", "two"), "and", Mention("FEAT-003")]
    )
    docs[feat5].lines.append(["me:", Link(feat5, "relative", "self"), Mention("FEAT-005"), "not", Link(feat4, "root", "four")])
    docs[key_of("notes/n02")].lines.append(["old:", Link(key_of("notes/archive/FEAT-002"), "relative", "archived"), Mention("FEAT-002")])
    docs[key_of("docs/guide")].lines.append(["broken:", Link(key_of("features/FEAT-099"), "relative", "soon"), Mention("FEAT-099")])
    return docs


def write(root: Path, doc: Doc) -> None:
    path = root / doc.key[0] / (doc.key[1] + ".md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(doc))


@dataclass
class Project:
    root: Path
    db: Any
    docs: dict[Key, Doc]


def make_project(base: Path, name: str, backend: str) -> Project:
    root = base / "project"
    docs = generate()
    for doc in docs.values():
        write(root, doc)
    db = new_db(base, name, backend)
    run_import(root, db)
    return Project(root, db, docs)


@pytest.fixture(scope="module", params=BACKENDS)
def project(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Project:
    return make_project(tmp_path_factory.mktemp("links"), "links", request.param)


# --------------------------------------------------------------------------------------
# calls and checks


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def out_view(links: list[Expected]) -> list[dict[str, Any]]:
    return [
        {"line": l.line, "target": uri_of(l.target), "exists": l.exists, "mention": l.mention, "text": l.text}
        for l in links
    ]


def in_view(links: list[Expected]) -> list[dict[str, Any]]:
    return [
        {"source": uri_of(l.source), "line": l.line, "mention": l.mention, "text": l.text, "context": l.context}
        for l in links
    ]


def sources(links: list[Expected]) -> list[tuple[Key, int]]:
    return [(l.source, l.line) for l in links]


@dataclass
class Pages:
    links: list[dict[str, Any]]
    backlinks: list[dict[str, Any]]
    count: int
    mixed: int  # pages that hold both links and backlinks


async def page_all(client: Client, uri: str, **args: Any) -> Pages:
    """Follows nextCursor to the end, checking each page's size."""
    pages = Pages([], [], 0, 0)
    cursors: set[str] = set()
    cursor = None
    limit = args.get("limit", 50)
    while True:
        call = {"uri": uri, **args, **({"cursor": cursor} if cursor else {})}
        result = await client.call_tool("links", call)
        assert not result.is_error, (call, texts(result))
        sc = result.structured_content
        assert sc["uri"] == uri
        pages.count += 1
        pages.links += sc["links"]
        pages.backlinks += sc["backlinks"]
        pages.mixed += bool(sc["links"] and sc["backlinks"])
        size = len(sc["links"]) + len(sc["backlinks"])
        # Every link of the page is in its text too, with its line.
        text = texts(result)[0]
        for link in sc["links"]:
            assert f"line {link['line']}: {link['target']}" in text, (link, text)
        for link in sc["backlinks"]:
            assert f"{link['source']} line {link['line']}" in text, (link, text)
        cursor = sc.get("nextCursor")
        if cursor is None:
            # A last page is never empty, but for a document without links.
            assert size > 0 or pages.count == 1, call
            return pages
        assert size == limit, (call, sc)
        assert cursor not in cursors, f"cursor {cursor!r} came twice"
        cursors.add(cursor)
        assert pages.count < 200


async def check_all(client: Client, docs: dict[Key, Doc], paged: bool = True) -> dict[str, int]:
    """Every document's links and backlinks against the model's; counts of what was seen."""
    out, back = reference(docs)
    seen = {"links": 0, "backlinks": 0, "broken": 0, "mentions": 0, "paged": 0, "mixed": 0}
    for key in sorted(docs, key=sort_key):
        uri = uri_of(key)
        expected_out, expected_in = out_view(out[key]), in_view(back[key])
        whole = await page_all(client, uri)
        assert (whole.links, whole.backlinks) == (expected_out, expected_in), uri
        assert whole.count == 1, uri
        seen["links"] += len(expected_out)
        seen["backlinks"] += len(expected_in)
        seen["broken"] += sum(not l["exists"] for l in expected_out)
        seen["mentions"] += sum(l["mention"] for l in expected_out)
        if not paged:
            continue
        small = await page_all(client, uri, limit=3)
        assert (small.links, small.backlinks) == (expected_out, expected_in), uri
        assert small.count == max(1, -(-(len(expected_out) + len(expected_in)) // 3)), uri
        seen["paged"] += small.count > 1
        seen["mixed"] += small.mixed
        only_out = await page_all(client, uri, direction="out", limit=2)
        assert (only_out.links, only_out.backlinks) == (expected_out, []), uri
        only_in = await page_all(client, uri, direction="in", limit=4)
        assert (only_in.links, only_in.backlinks) == ([], expected_in), uri
    return seen


@pytest.mark.parametrize("mode", MODES)
def test_links_and_backlinks_match_the_model(project: Project, mode: str) -> None:
    async def body(client: Client) -> None:
        seen = await check_all(client, project.docs)
        # The project exercises what it means to: pages that cross from links to backlinks,
        # broken links, mentions, and more than a handful of each.
        assert seen["links"] > 100 and seen["backlinks"] > 80, seen
        assert seen["broken"] >= 5 and seen["mentions"] >= 10, seen
        assert seen["paged"] >= 20 and seen["mixed"] >= 5, seen

    with_client(project.db, mode, body)


def test_the_model_plants_every_kind() -> None:
    """The generated files hold every spelling, and the decoys the server must pass over."""
    docs = generate()
    rendered = "\n".join(render(doc) for doc in docs.values())
    items = [item for doc in docs.values() for line in doc.lines for item in line]
    spellings = {item.spelling for item in items if isinstance(item, Link)}
    assert spellings == set(SPELLINGS)
    for decoy in ["```md", "    FEAT-", "` and `", "![", "https://example.com/", "BUG-042", "in a link's text", "depends: "]:
        assert decoy in rendered, decoy
    out, back = reference(docs)
    # The second document of a name gets its links, never the mentions of its name.
    archived = back[key_of("notes/archive/FEAT-002")]
    assert archived and not any(l.mention for l in archived)
    assert any(l.mention for l in back[key_of("features/FEAT-002")])
    # Twice on a line is once; a link and a mention of one document on a line are two.
    n01 = [l for l in out[key_of("notes/n01")] if l.target == key_of("features/FEAT-003") and l.text in ("one", "two")]
    assert [l.text for l in n01] == ["one"]


@pytest.mark.parametrize("mode", MODES)
def test_errors_and_declaration(project: Project, mode: str) -> None:
    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        links = tools["links"]
        assert links.annotations is not None and links.annotations.read_only_hint is True
        assert links.output_schema is not None and links.input_schema["required"] == ["uri"]
        assert set(links.input_schema["properties"]["direction"]["enum"]) == {"out", "in", "both"}
        # The server's instructions say which tool reads what, links included (pinned to
        # 2026-07-28 the client asks for no discover result: ask for it).
        if mode == "2026-07-28":
            instructions = (await client.session.send_discover("2026-07-28"))["instructions"]
        else:
            instructions = client.instructions
        assert "links shows what a document links to and what links to it" in instructions, instructions

        uri = "orchestra://features/FEAT-001"
        first = await client.call_tool("links", {"uri": uri, "limit": 1})
        assert "nextCursor" in first.structured_content, first.structured_content
        cursor = first.structured_content["nextCursor"]

        async def error(args: dict[str, Any], *words: str) -> None:
            result = await client.call_tool("links", args)
            assert result.is_error, (args, result)
            message = texts(result)[0]
            for word in words:
                assert word in message, (args, message)

        await error({"uri": uri, "cursor": "not a cursor"}, "invalid cursor")
        await error({"uri": uri, "cursor": cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]}, "invalid cursor")
        await error({"uri": "orchestra://features/FEAT-002", "cursor": cursor}, "invalid cursor", "another document")
        await error({"uri": "orchestra://features/FEAT-777"}, "no such document: orchestra://features/FEAT-777")
        # A missing document that other documents link to is still no document.
        await error({"uri": "orchestra://notes/gone"}, "no such document")
        await error({"uri": "https://example.com/a.md"}, "invalid uri")
        await error({"uri": uri, "direction": "sideways"}, "direction must be")
        await error({"uri": uri, "limit": 0}, "limit")
        await error({"uri": uri, "depth": 2}, "unknown argument")
        # The cursor still works after all that.
        again = await client.call_tool("links", {"uri": uri, "limit": 1, "cursor": cursor})
        assert not again.is_error

    with_client(project.db, mode, body)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_edits_move_backlinks(tmp_path: Path, backend: str, mode: str) -> None:
    project = make_project(tmp_path, f"links_edit_{mode[:2]}", backend)
    docs = project.docs
    feat1, feat99, n01 = key_of("features/FEAT-001"), key_of("features/FEAT-099"), key_of("notes/n01")
    out, back = reference(docs)
    # The document whose link goes: one that links to FEAT-001 with a Markdown link.
    dropped = next(
        l for l in back[feat1] if not any(m.mention and (m.source, m.line) == (l.source, l.line) for m in back[feat1])
    )
    # The one that gains a link to n01, above its other links: one with links, not yet to n01.
    gains = next(
        k
        for k in sorted(docs, key=sort_key)
        if k not in (n01, dropped.source) and len(out[k]) >= 2 and all(l.target != n01 for l in out[k])
    )
    # A document removed: linked to, but not the first of a name.
    removed = next(
        k
        for k in sorted(docs, key=sort_key)
        if back[k] and name_of(k[1]) is None and k not in (n01, gains, dropped.source, feat1)
    )

    async def body(client: Client) -> None:
        await check_all(client, docs, paged=False)
        result = await client.call_tool("links", {"uri": uri_of(feat99)})
        assert result.is_error and "no such document" in texts(result)[0]
        broken = [l for ls in out.values() for l in ls if l.target == feat99]
        assert broken and not any(l.exists for l in broken)

        # Edit the files and import again, under the running server.
        line = docs[dropped.source].lines[dropped.line - first_line(docs[dropped.source])]
        line[:] = [item for item in line if not (isinstance(item, Link) and item.target == feat1)]
        docs[gains].lines.insert(2, ["new:", Link(n01, "relative", "the first note")])
        docs[feat99] = Doc(feat99, [], [["# FEAT-099"], [""], ["Now here, after", Link(feat1, "uri", "one")]])
        for key in (dropped.source, gains, feat99):
            write(project.root, docs[key])
        (project.root / removed[0] / (removed[1] + ".md")).unlink()
        del docs[removed]
        run_import(project.root, project.db)

        new_out, new_back = reference(docs)
        await check_all(client, docs)
        # What changed, said outright (check_all compared everything with the new model).
        assert (dropped.source, dropped.line) in sources(back[feat1])
        assert (dropped.source, dropped.line) not in sources(new_back[feat1])
        assert (feat99, 3) in sources(new_back[feat1])
        gained = [l for l in new_back[n01] if l.source == gains]
        assert [l.line for l in gained] == [first_line(docs[gains]) + 2]
        # Every other link of the document that gained one moved a line down (less the mentions
        # of FEAT-099, which count now).
        moved = [(l.line - 1, l.target, l.text) for l in new_out[gains] if l.target != n01 and l.target != feat99]
        assert moved == [(l.line, l.target, l.text) for l in out[gains] if l.target != feat99]
        # The broken link is whole, and the mentions of the new name count.
        whole = new_back[feat99]
        assert any(not l.mention for l in whole) and any(l.mention for l in whole)
        page = await client.call_tool("links", {"uri": uri_of(feat99), "direction": "in", "limit": 200})
        assert page.structured_content["backlinks"] == in_view(new_back[feat99])
        guide = await client.call_tool("links", {"uri": "orchestra://docs/guide", "direction": "out", "limit": 200})
        assert {"target": uri_of(feat99), "exists": True, "mention": False} in [
            {k: l[k] for k in ("target", "exists", "mention")} for l in guide.structured_content["links"]
        ]
        # Links to the removed document are broken now.
        stale = [l for ls in new_out.values() for l in ls if l.target == removed]
        assert stale and not any(l.exists for l in stale)

    with_client(project.db, mode, body)
