"""Interop tests: the `search` tool of `orchestra serve`, called through the official Python MCP
client (mcp 2.3.0, `tools/call`) against a generated backlog with planted words.

The backlog (a few hundred documents in features/, notes/ and docs/, generated from a fixed seed)
holds about a dozen planted words: in bodies, in frontmatter titles, in descriptions, in ids, in
frontmatter fields that are not indexed, with accents and in other cases, with punctuation
(`PLAN-0042`, `v9.7`), next to near misses (`PLAN-00420`, `v9.70`, `quillfeathers`), and in
non-UTF-8 documents (whose bytes are not indexed, only their key and title).

For every query, the expected hits come from a brute-force reference in this file: the FTS5
`unicode61 remove_diacritics 2` tokenizer redone in Python (words are runs of letters and
digits, case and accents folded; a term with punctuation is its words in sequence), applied to
what orchestra says it indexes: the key `prefix/id`, the title, the frontmatter `description`
and the body after the frontmatter block (UTF-8 documents only). The reference works on the
files as written, and on the titles and descriptions the generator put into them; the hits'
titles and descriptions are checked against the same.

Each search is followed page by page (small `limit`, `nextCursor`), and every page is checked:
`structuredContent` against the tool's `outputSchema`, `total`, no repeated hit, scores that
never increase, snippets of at most one short line, one `resource_link` per hit, in hit order,
and every linked document readable with `resources/read`, byte-exact.

Every test runs on a SQLite file and on a PostgreSQL database: the same hits, totals, pages, titles,
descriptions, links and snippets (PostgreSQL ranks by `ts_rank`, so only the scores differ, and
they are only checked never to increase).

The Python client always negotiates the newest handshake version (2025-11-25) in "legacy" mode,
so the text-only result of sessions older than 2025-06-18 is not reachable through it without
patching the client; the Rust tests cover it.

The binary comes from $ORCHESTRA_BIN (default: target/release/orchestra in the repo).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import os
import random
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import jsonschema
import pytest
from mcp import Client, MCPError
from mcp.types import BlobResourceContents, ResourceLink, TextContent, TextResourceContents

# The store and client helpers of the stdio tests (same folder, on sys.path under pytest's default
# import mode): a SQLite file or a PostgreSQL database, the import, a stdio session in a mode.
from test_python_client import BACKENDS, new_db, run_import, with_client

MODES = ["legacy", "auto", "2026-07-28"]
EXPECTED_PROTOCOL = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}
PAGE = 7  # hits per page: small, so that most planted words need several pages
MAX_SNIPPET = 220  # "about 200 characters": 200, an ellipsis, a closing `**`, some slack
SEED = 20261201


# --------------------------------------------------------------------------------------
# the reference: what FTS5 `unicode61 remove_diacritics 2` finds, redone in Python


def _is_token_char(ch: str) -> bool:
    """unicode61's default token characters: the categories L*, N* and Co."""
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Co"


def _fold(word: str) -> str:
    """Lower case, diacritics removed (`Zürichsee` -> `zurichsee`)."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def tokens(text: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            out.append(_fold("".join(current)))
            current = []
    if current:
        out.append(_fold("".join(current)))
    return out


def phrase_in(field_tokens: list[str], phrase: list[str], prefix: bool) -> bool:
    """The phrase's words in sequence inside one field; with `prefix`, the last one a prefix."""
    n = len(phrase)
    if n == 0:
        return False
    for i in range(len(field_tokens) - n + 1):
        window = field_tokens[i : i + n]
        if window[:-1] == phrase[:-1] and (
            window[-1].startswith(phrase[-1]) if prefix else window[-1] == phrase[-1]
        ):
            return True
    return False


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(yaml, body) as orchestra splits them: a first line `---`, closed by a line `---` or `...`."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")

    def marker(line: str, m: str) -> bool:
        return line.removesuffix("\r").rstrip(" \t") == m

    if len(lines) < 2 or not marker(lines[0], "---"):
        return None, text
    for i in range(1, len(lines)):
        if marker(lines[i], "---") or marker(lines[i], "..."):
            if i == len(lines) - 1:  # closing marker on the last line, no newline after it
                return "\n".join(lines[1:i]), ""
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    return None, text


# --------------------------------------------------------------------------------------
# the generated backlog


PREFIX_ORDER = {"docs": 0, "features": 1, "notes": 2}


def doc_uri(prefix: str, doc_id: str) -> str:
    """orchestra://PREFIX/ID, each '/'-separated segment percent-encoded except unreserved chars."""
    return f"orchestra://{prefix}/" + "/".join(quote(seg, safe="") for seg in doc_id.split("/"))


@dataclass(eq=False)
class Doc:
    """One generated document, as written, with what orchestra should derive from it."""

    prefix: str
    id: str
    style: str  # "fm" (frontmatter with title), "fm-heading" (frontmatter, title from heading), "heading", "bare", "binary"
    frontmatter: dict[str, Any] | None = None  # None: no frontmatter block
    heading: str | None = None  # a first `# ` line of the body
    paragraphs: list[str] = field(default_factory=list)
    crlf: bool = False
    raw: bytes | None = None  # binary documents: the bytes as they are
    path: Path | None = None
    data: bytes = b""

    @property
    def key(self) -> str:
        return f"{self.prefix}/{self.id}"

    @property
    def uri(self) -> str:
        return doc_uri(self.prefix, self.id)

    @property
    def sort_key(self) -> tuple[int, str]:
        return (PREFIX_ORDER[self.prefix], self.id)

    @property
    def is_text(self) -> bool:
        return self.raw is None

    @property
    def title(self) -> str:
        if self.frontmatter is not None and "title" in self.frontmatter:
            return self.frontmatter["title"]
        if self.heading is not None:
            return self.heading
        return self.id

    @property
    def description(self) -> str | None:
        if self.frontmatter is None:
            return None
        return self.frontmatter.get("description")

    def render(self) -> bytes:
        if self.raw is not None:
            return self.raw
        parts: list[str] = []
        if self.frontmatter is not None:
            lines = ["---"]
            for name, value in self.frontmatter.items():
                if isinstance(value, list):
                    if value and len(value) % 2 == 0:  # block style for some lists
                        lines.append(f"{name}:")
                        lines.extend(f"  - {item}" for item in value)
                    else:
                        lines.append(f"{name}: [{', '.join(value)}]")
                elif name in ("title", "description"):
                    lines.append(f"{name}: {json.dumps(value, ensure_ascii=False)}")
                else:
                    lines.append(f"{name}: {value}")
            lines.append("---")
            parts.append("\n".join(lines) + "\n")
        body = []
        if self.heading is not None:
            body.append(f"# {self.heading}")
        body.extend(self.paragraphs)
        parts.append("\n\n".join(body) + "\n")
        text = "\n".join(parts)
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return text.encode("utf-8")

    def write(self, root: Path) -> None:
        self.data = self.render()
        self.path = root / self.prefix / (self.id + ".md")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(self.data)


@dataclass(frozen=True)
class Word:
    """A planted word: how it is searched, how it is written, where it goes, and its near misses."""

    query: str
    spellings: tuple[str, ...]
    places: tuple[str, ...]  # drawn per planted document: body, title, description, hidden (not indexed)
    decoys: tuple[str, ...] = ()
    count: tuple[int, int] = (8, 30)


WORDS = [
    Word("quillfeather", ("quillfeather", "Quillfeather", "QUILLFEATHER", "(quillfeather)", "_quillfeather_"),
         ("body", "body", "body", "title", "description", "hidden"),
         ("quillfeathers", "quill-feather", "quillfeatherish", "quill feather")),
    Word("marzipanic", ("marzipanic", "Marzipanic,"), ("body", "body", "title"), ("marzipan", "marzipanics")),
    Word("zurichsee", ("Zürichsee", "ZÜRICHSEE", "zürichsee", "Zurichsee", "zurichsee."),
         ("body", "body", "title", "description"), ("Zuerichsee", "Zürich see", "Zürichseen")),
    Word("PLAN-0042", ("PLAN-0042", "plan-0042", "PLAN 0042", "plan_0042", "[PLAN-0042]"),
         ("body", "body", "title", "description"), ("PLAN-00420", "PLAN-0043", "PLAN0042", "0042-PLAN", "PLAN-4200")),
    Word("v9.7", ("v9.7", "V9.7", "v9.7.1", "(v9.7)"), ("body", "body", "description"),
         ("v9.70", "v9", "9.7", "v97", "v9-8.7", "v8.7")),
    Word("brontosaurine", ("brontosaurine", "Brontosaurine"), ("title",), ("brontosaur", "brontosaurines")),
    Word("glimmerwick", ("glimmerwick", "Glimmerwick"), ("description",), ("glimmer-wick", "glimmerwicks")),
    Word("snorkelhaus", ("snorkelhaus", "Snorkelhaus"), ("body", "hidden", "hidden"), ("snorkel haus", "snorkelhause")),
    Word("creme-brulee", ("crème-brûlée", "Crème Brûlée", "CREME BRULEE", "crème brûlée"), ("body", "title"),
         ("crème", "brûlée crème", "cremebrulee")),
    Word("xylograph", ("xylograph", "Xylograph"), ("title", "body"), ("xylographs", "xylo-graph")),
    Word("fjordbyte", ("fjordbyte", "FjordByte"), ("body",), ("fjord byte", "fjordbytes"), count=(3, 6)),
]
WORD_BY_QUERY = {w.query: w for w in WORDS}
# Beyond the planted words: a phrase and a prefix.
PHRASE = ("amber lantern", ("amber lantern", "Amber Lantern", "amber, lantern"), ("lantern amber", "amber the lantern"))
PREFIX_WORDS = ("zorblax", "zorblin", "Zorbl", "ZORBLUNGEN")
PREFIX_DECOYS = ("azorbl", "zor-bl", "zorb")

FILLER = ("sync offline queue photo dispatch signature depot valve retry schema ledger harbor copper "
          "migration token device rollout review ticket amber lantern login code").split()
STATUSES = ("open", "closed", "draft", "in-progress")
TAGS = ("sync", "mobile", "web", "ops", "security", "billing")


def _paragraph(rng: random.Random) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(rng.randint(6, 40))) + "."


def _insert(rng: random.Random, doc: Doc, text: str) -> None:
    """Insert `text` at a random word boundary of a random paragraph."""
    if not doc.paragraphs:
        doc.paragraphs.append(_paragraph(rng))
    i = rng.randrange(len(doc.paragraphs))
    words = doc.paragraphs[i].split(" ")
    words.insert(rng.randint(0, len(words)), text)
    doc.paragraphs[i] = " ".join(words)


@dataclass
class Backlog:
    root: Path
    db: Path | str
    docs: list[Doc]
    _fields: dict[int, list[list[str]]] = field(default_factory=dict)

    def by_uri(self) -> dict[str, Doc]:
        return {d.uri: d for d in self.docs}

    # the reference

    def fields(self, doc: Doc) -> list[list[str]]:
        """The token lists of the indexed fields of `doc`: key, title, description, body."""
        cached = self._fields.get(id(doc))
        if cached is not None:
            return cached
        out = [tokens(doc.key), tokens(doc.title), tokens(doc.description or "")]
        out.append(tokens(split_frontmatter(doc.data.decode("utf-8"))[1]) if doc.is_text else [])
        self._fields[id(doc)] = out
        return out

    def term(self, text: str, prefix: bool = False) -> set[str]:
        phrase = tokens(text)
        assert phrase, f"reference: {text!r} has no words"
        return {d.uri for d in self.docs if any(phrase_in(f, phrase, prefix) for f in self.fields(d))}

    def where(self, name: str, value: str) -> set[str]:
        out = set()
        for d in self.docs:
            v = (d.frontmatter or {}).get(name) if d.is_text else None
            if v == value or (isinstance(v, list) and value in v):
                out.add(d.uri)
        return out

    def under(self, under: str) -> set[str]:
        prefix, _, folder = under.partition("/")
        return {d.uri for d in self.docs if d.prefix == prefix and (not folder or d.id.startswith(folder + "/"))}

    def all(self) -> set[str]:
        return {d.uri for d in self.docs}

    def in_key_order(self, uris: Iterable[str]) -> list[str]:
        by_uri = self.by_uri()
        return [d.uri for d in sorted((by_uri[u] for u in uris), key=lambda d: d.sort_key)]


def generate_docs(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []

    def new(prefix: str, doc_id: str) -> Doc:
        r = rng.random()
        style = "fm" if r < 0.6 else "fm-heading" if r < 0.7 else "heading" if r < 0.88 else "bare"
        doc = Doc(prefix, doc_id, style, paragraphs=[_paragraph(rng) for _ in range(rng.randint(1, 4))])
        if style in ("fm", "fm-heading"):
            fm: dict[str, Any] = {}
            if style == "fm":
                fm["title"] = f"{prefix.capitalize()} {doc_id.replace('/', ' ')} {rng.choice(FILLER)}"
            if rng.random() < 0.5:
                fm["description"] = f"About {rng.choice(FILLER)} and {rng.choice(FILLER)}"
            if rng.random() < 0.9:
                fm["status"] = rng.choice(STATUSES)
            fm["tags"] = rng.sample(TAGS, rng.randint(0, 3))
            if rng.random() < 0.3:
                fm["owner"] = rng.choice(("ana", "bo", "chen"))
            doc.frontmatter = fm
            doc.crlf = rng.random() < 0.05
            if style == "fm" and rng.random() < 0.3:
                doc.paragraphs.insert(0, "# A heading that is not the title")
        if style in ("fm-heading", "heading"):
            doc.heading = f"Heading {doc_id.split('/')[-1]} {rng.choice(FILLER)}"
        if style == "bare":
            doc.paragraphs = [p.replace("# ", "") for p in doc.paragraphs]
        docs.append(doc)
        return doc

    for n in range(1, 151):
        new("features", f"FEAT-{n:04d}")
    for n in range(1, 61):
        new("notes", f"note-{n:03d}")
    for n in range(1, 31):
        new("notes", f"meetings/2026/{n:02d}")
    for n in range(1, 21):
        new("notes", f"meetings/2025/q{n % 4 + 1}/{n:02d}")
    new("notes", "trips/zürichsee-ferry")  # a planted word in the id only
    for n in range(1, 41):
        new("docs", f"adr/{n:04d}")
    for n in range(1, 6):
        new("docs", f"adr/superseded/{n:04d}")
    for n in range(1, 6):
        new("docs", f"adr-archive/{n:04d}")  # sorts before `adr/`: not under docs/adr
    for n in range(1, 4):
        new("docs", f"adrs/{n:04d}")  # sorts after `adr/`: not under docs/adr either
    for n in range(1, 41):
        new("docs", f"guides/{('sync', 'mobile', 'web', 'ops')[n % 4]}/page-{n:03d}")
    # The id-like word in an id: found by the key.
    new("features", "PLAN-0042-rollout")
    return docs


def binary_docs() -> list[Doc]:
    """Non-UTF-8 documents (Latin-1 bytes) with planted words in their bytes: only their key and
    title (the id, for a binary document) are indexed."""
    specs = [
        ("notes", "legacy/export-01", b"# Export quillfeather\n\nZ\xfcrichsee snorkelhaus marzipanic caf\xe9 v9.7 PLAN-0042\n"),
        ("notes", "legacy/export-02", b"---\nstatus: open\ntags: [sync]\ntitle: glimmerwick\n---\nxylograph cr\xe8me-br\xfbl\xe9e \xa9\n"),
        ("notes", "legacy/quillfeather-latin1", b"quillfeather in the key, \xe0 bient\xf4t\n"),
        ("features", "FEAT-latin1-z\u00fcrichsee", b"fjordbyte brontosaurine amber lantern zorblax \xff\n"),
        ("docs", "adr/0099-latin1", b"# ADR in Latin-1: snorkelhaus quillfeather \xe9t\xe9\n"),
    ]
    out = []
    for prefix, doc_id, data in specs:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:  # pragma: no cover - a broken generator
            raise AssertionError(f"{prefix}/{doc_id} is valid UTF-8")
        out.append(Doc(prefix, doc_id, "binary", raw=data))
    return out


def plant(rng: random.Random, docs: list[Doc]) -> None:
    text_docs = [d for d in docs if d.is_text and d.id != "trips/zürichsee-ferry"]
    for word in WORDS:
        for doc in rng.sample(text_docs, rng.randint(*word.count)):
            spelling = rng.choice(word.spellings)
            place = rng.choice(word.places)
            if place == "title" and doc.frontmatter is not None and "title" in doc.frontmatter:
                doc.frontmatter["title"] = f"{doc.frontmatter['title']} {spelling}"
            elif place == "title" and doc.heading is not None:
                doc.heading = f"{spelling} {doc.heading}"  # the heading is the title, and in the body
            elif place == "description" and doc.frontmatter is not None:
                doc.frontmatter["description"] = f"{doc.frontmatter.get('description', 'Described')} {spelling}"
            elif place == "hidden" and doc.frontmatter is not None:
                # Frontmatter that is neither title nor description: not full-text indexed.
                if rng.random() < 0.5:
                    doc.frontmatter["owner"] = word.query
                else:
                    doc.frontmatter["tags"] = [*doc.frontmatter["tags"], word.query]
            elif place in ("title", "description"):
                continue  # a title-only or description-only word is never put in a body instead
            else:
                _insert(rng, doc, spelling)
        for decoy in word.decoys:
            for doc in rng.sample(text_docs, 3):
                _insert(rng, doc, decoy)
    phrase, spellings, decoys = PHRASE
    for doc in rng.sample(text_docs, 12):
        _insert(rng, doc, rng.choice(spellings))
    for doc in rng.sample(text_docs, 12):
        _insert(rng, doc, rng.choice(decoys))
    for doc in rng.sample(text_docs, 15):
        _insert(rng, doc, rng.choice(PREFIX_WORDS))
    for doc in rng.sample(text_docs, 6):
        _insert(rng, doc, rng.choice(PREFIX_DECOYS))
    # Combinations the query-language checks need, whatever the draw.
    by_key = {d.key: d for d in docs}
    _insert(rng, by_key["features/FEAT-0007"], "quillfeather marzipanic Zürichsee")
    _insert(rng, by_key["docs/adr/0003"], "quillfeather")
    _insert(rng, by_key["docs/adr/superseded/0002"], "quillfeather")
    _insert(rng, by_key["docs/adr-archive/0001"], "quillfeather")
    _insert(rng, by_key["docs/adrs/0001"], "quillfeather")
    _insert(rng, by_key["notes/meetings/2026/05"], "glimmerwick brontosaurine quillfeather")


@pytest.fixture(scope="module", params=BACKENDS)
def backlog(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Backlog:
    rng = random.Random(SEED)
    base = tmp_path_factory.mktemp("search")
    root = base / "project"
    docs = generate_docs(rng)
    plant(rng, docs)
    docs.extend(binary_docs())
    for doc in docs:
        doc.write(root)
    db = new_db(base, "search", request.param)
    run_import(root, db)
    backlog = Backlog(root, db, docs)
    # The generator must have produced what the tests rely on.
    for word in WORDS:
        found = backlog.term(word.query)
        assert 0 < len(found) < len(docs), f"generator: {word.query!r} is in {len(found)} documents"
    assert any(len(backlog.term(w.query)) > 2 * PAGE for w in WORDS), "generator: no word needs three pages"
    # Near misses exist: documents whose text holds the word as a substring without holding the word.
    for word in WORDS:
        if any(_fold(word.query) in _fold(decoy) for decoy in word.decoys):
            found = backlog.term(word.query)
            near = [d for d in docs if d.is_text and d.uri not in found and _fold(word.query) in _fold(d.data.decode())]
            assert near, f"generator: no near miss of {word.query!r}"
    return backlog


# --------------------------------------------------------------------------------------
# the client


@dataclass
class Run:
    """Every page of one search, followed to the end."""

    label: str
    pages: list[Any]  # CallToolResult

    @property
    def hits(self) -> list[dict[str, Any]]:
        return [hit for page in self.pages for hit in page.structured_content["hits"]]

    @property
    def uris(self) -> list[str]:
        return [hit["uri"] for hit in self.hits]


async def output_schema(client: Client) -> dict[str, Any]:
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search", "read", "outline", "list", "links", "history", "diff"], f"tools/list: {[t.name for t in tools]}"
    tool = tools[0]
    schema = tool.input_schema
    assert schema.get("type") == "object", schema
    assert schema.get("required") == ["query"], schema
    props = schema.get("properties", {})
    assert props["query"]["type"] == "string" and props["under"]["type"] == "string", props
    assert props["where"]["type"] == "object" and props["where"]["additionalProperties"] == {"type": "string"}, props
    assert props["limit"]["type"] == "integer", props
    assert (props["limit"].get("minimum"), props["limit"].get("maximum"), props["limit"].get("default")) == (1, 100, 20)
    assert props["cursor"]["type"] == "string", props
    assert tool.output_schema is not None, "the search tool has no outputSchema"
    jsonschema.validators.validator_for(tool.output_schema).check_schema(tool.output_schema)
    return tool.output_schema


async def search_all(client: Client, label: str, arguments: dict[str, Any], limit: int = PAGE) -> Run:
    pages = []
    cursor = None
    seen_cursors: set[str] = set()
    while True:
        args = {**arguments, "limit": limit}
        if cursor is not None:
            args["cursor"] = cursor
        result = await client.call_tool("search", args)
        assert not result.is_error, f"{label}: isError, page {len(pages) + 1}: {result.content}"
        assert isinstance(result.structured_content, dict), f"{label}: no structuredContent: {result}"
        pages.append(result)
        cursor = result.structured_content.get("nextCursor")
        if cursor is None:
            return Run(label, pages)
        assert cursor not in seen_cursors, f"{label}: cursor {cursor!r} returned twice"
        seen_cursors.add(cursor)
        assert len(pages) < 200, f"{label}: more than 200 pages"


def check_run(backlog: Backlog, schema: dict[str, Any], run: Run, expected: set[str] | list[str],
              limit: int = PAGE) -> list[str]:
    """Everything a followed search must satisfy; returns the problems found."""
    label = run.label
    problems: list[str] = []
    by_uri = backlog.by_uri()
    expected_set = set(expected)
    validator = jsonschema.validators.validator_for(schema)(schema)

    for n, page in enumerate(run.pages, 1):
        sc = page.structured_content
        errors = sorted(validator.iter_errors(sc), key=str)
        if errors:
            problems.append(f"{label}: page {n}: structuredContent does not match outputSchema: {errors[0].message}")
            continue
        if sc["total"] != len(expected_set):
            problems.append(f"{label}: page {n}: total {sc['total']}, reference {len(expected_set)}")
        last = n == len(run.pages)
        if not last and len(sc["hits"]) != limit:
            problems.append(f"{label}: page {n} of {len(run.pages)} holds {len(sc['hits'])} hits, limit {limit}")
        # content: one text block, then one resource_link per hit, in hit order
        content = page.content
        if not content or not isinstance(content[0], TextContent) or not content[0].text:
            problems.append(f"{label}: page {n}: content does not start with a text block: {content[:1]}")
            continue
        links = content[1:]
        if len(links) != len(sc["hits"]) or not all(isinstance(b, ResourceLink) for b in links):
            problems.append(f"{label}: page {n}: {len(sc['hits'])} hits but content {[type(b).__name__ for b in content]}")
            continue
        for hit, link in zip(sc["hits"], links):
            doc = by_uri.get(hit["uri"])
            if link.uri != hit["uri"]:
                problems.append(f"{label}: resource_link {link.uri} for hit {hit['uri']}")
            if doc is not None and (link.name != doc.id or link.mime_type != "text/markdown"
                                    or link.title != hit["title"] or link.size != len(doc.data)):
                problems.append(f"{label}: resource_link {link.uri}: name {link.name!r}, mimeType {link.mime_type!r}, "
                                f"title {link.title!r}, size {link.size!r}")

    uris = run.uris
    if len(uris) != len(set(uris)):
        repeated = sorted({u for u in uris if uris.count(u) > 1})
        problems.append(f"{label}: hits repeated across pages: {repeated[:5]}")
    got = set(uris)
    missing, extra = sorted(expected_set - got), sorted(got - expected_set)
    if missing:
        problems.append(f"{label}: {len(missing)} documents not found: {[by_uri[u].key for u in missing][:8]}")
    if extra:
        problems.append(f"{label}: {len(extra)} hits that do not match: {[by_uri[u].key if u in by_uri else u for u in extra][:8]}")
    if isinstance(expected, list) and not missing and not extra and uris != expected:
        problems.append(f"{label}: not in key order: {uris[:10]} …, expected {expected[:10]} …")
    pages_expected = max(1, math.ceil(len(expected_set) / limit))
    if len(run.pages) != pages_expected:
        problems.append(f"{label}: {len(run.pages)} pages for {len(expected_set)} hits, limit {limit}")

    scores = [hit["score"] for hit in run.hits]
    for i in range(1, len(scores)):
        if scores[i] > scores[i - 1]:
            problems.append(f"{label}: score rises at hit {i}: {scores[i - 1]} then {scores[i]}")
            break
    if isinstance(expected, list) and any(s != 0 for s in scores):  # key order: no relevance
        problems.append(f"{label}: scores of a key-order listing: {scores[:5]}")

    for hit in run.hits:
        doc = by_uri.get(hit["uri"])
        if len(hit["snippet"]) > MAX_SNIPPET or "\n" in hit["snippet"]:
            problems.append(f"{label}: {hit['uri']}: snippet of {len(hit['snippet'])} chars: {hit['snippet']!r}")
        if doc is None:
            continue
        if hit["title"] != doc.title:
            problems.append(f"{label}: {doc.key}: title {hit['title']!r}, expected {doc.title!r}")
        if hit.get("description") != doc.description:
            problems.append(f"{label}: {doc.key}: description {hit.get('description')!r}, expected {doc.description!r}")
        if not doc.is_text and hit["snippet"] != "":
            problems.append(f"{label}: {doc.key}: binary document with snippet {hit['snippet']!r}")
    return problems


def snippet_problems(backlog: Backlog, run: Run, word: str, prefix: bool = False) -> list[str]:
    """A hit matched in its body shows the match highlighted (`**…**`); a hit matched only in its key,
    title or description shows the start of its body, past the frontmatter (or, for a description
    match, the description with the match highlighted)."""
    problems = []
    by_uri = backlog.by_uri()
    phrase = tokens(word)
    for hit in run.hits:
        doc = by_uri.get(hit["uri"])
        if doc is None or not doc.is_text:
            continue
        body_tokens = backlog.fields(doc)[3]
        snippet = hit["snippet"]
        if phrase_in(body_tokens, phrase, prefix):
            marked = re.findall(r"\*\*(.+?)\*\*", snippet)
            if not any(phrase_in(tokens(m), phrase[:1], prefix and len(phrase) == 1) for m in marked):
                problems.append(f"{run.label}: {doc.key}: body match not highlighted in {snippet!r}")
        else:
            _, body = split_frontmatter(doc.data.decode("utf-8"))
            lead = " ".join(body.split())
            is_lead = "**" not in snippet and lead.startswith(snippet.removesuffix("…"))
            # A match in the description may be shown from the description instead, marked.
            description = " ".join((doc.description or "").split())
            from_description = (phrase_in(backlog.fields(doc)[2], phrase, prefix) and "**" in snippet
                                and snippet.replace("**", "").strip("…") in description)
            if not (is_lead or from_description):
                problems.append(f"{run.label}: {doc.key}: snippet {snippet!r} is neither the start of the body "
                                f"{lead[:80]!r} nor a marked excerpt of the description")
    return problems


async def read_all(client: Client, uris: Iterable[str]) -> dict[str, bytes]:
    out = {}
    for uri in sorted(set(uris)):
        result = await client.read_resource(uri)
        assert len(result.contents) == 1, f"{uri}: {len(result.contents)} contents"
        content = result.contents[0]
        if isinstance(content, TextResourceContents):
            out[uri] = content.text.encode("utf-8")
        else:
            assert isinstance(content, BlobResourceContents)
            out[uri] = base64.b64decode(content.blob, validate=True)
    return out


def report(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:25])


# --------------------------------------------------------------------------------------
# the planted words, in every client mode


@pytest.mark.parametrize("mode", MODES)
def test_planted_words(backlog: Backlog, mode: str) -> None:
    queries = [w.query for w in WORDS] + ["QUILLFEATHER", "Zürichsee", "ZURICHSEE", "plan-0042", "crème-brûlée"]

    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Run], dict[str, bytes]]:
        assert client.protocol_version == EXPECTED_PROTOCOL[mode]
        schema = await output_schema(client)
        runs = {q: await search_all(client, f"[{mode}] {q!r}", {"query": q}) for q in queries}
        linked = {uri for run in runs.values() for uri in run.uris}
        return schema, runs, await read_all(client, linked)

    schema, runs, read = with_client(backlog.db, mode, body)
    problems: list[str] = []
    by_uri = backlog.by_uri()
    for query, run in runs.items():
        expected = backlog.term(query)
        problems += check_run(backlog, schema, run, expected)
    for uri, data in read.items():
        if uri in by_uri and data != by_uri[uri].data:
            problems.append(f"resources/read {uri}: bytes differ from {by_uri[uri].path}")
    report(problems)

    # The non-UTF-8 documents hold planted words in their bytes, yet are found by key only.
    binary = [d for d in backlog.docs if not d.is_text]
    for doc in binary:
        for word in WORDS:
            hit = doc.uri in runs[word.query].uris
            in_key = phrase_in(tokens(doc.key), tokens(word.query), False)
            assert hit == in_key, f"{word.query!r}: binary document {doc.key} {'found' if hit else 'not found'}"
    planted_in_bytes = [(d, w) for d in binary for w in WORDS
                        if _fold(w.query) in _fold(d.data.decode("latin-1")) and not phrase_in(tokens(d.key), tokens(w.query), False)]
    assert len(planted_in_bytes) >= 10, "generator: too few planted words in the bytes of binary documents"


# --------------------------------------------------------------------------------------
# filters and the query language (one handshake session)


def test_filters_and_query_language(backlog: Backlog) -> None:
    b = backlog
    term = b.term
    cases: list[tuple[str, dict[str, Any], set[str] | list[str]]] = [
        # empty query and filters: key order
        ("where status=open", {"query": "", "where": {"status": "open"}}, b.in_key_order(b.where("status", "open"))),
        ("where tags has sync", {"query": "", "where": {"tags": "sync"}}, b.in_key_order(b.where("tags", "sync"))),
        ("where tags has a word hidden there", {"query": "", "where": {"tags": "snorkelhaus"}},
         b.in_key_order(b.where("tags", "snorkelhaus"))),
        ("where owner (scalar) is a word", {"query": "", "where": {"owner": "quillfeather"}},
         b.in_key_order(b.where("owner", "quillfeather"))),
        ("where status=open and tags has mobile", {"query": "", "where": {"status": "open", "tags": "mobile"}},
         b.in_key_order(b.where("status", "open") & b.where("tags", "mobile"))),
        ("where status=Open (case matters)", {"query": "", "where": {"status": "Open"}}, []),
        ("under docs/adr", {"query": "", "under": "docs/adr"}, b.in_key_order(b.under("docs/adr"))),
        ("under notes/meetings", {"query": "", "under": "notes/meetings"}, b.in_key_order(b.under("notes/meetings"))),
        ("under features, status=draft", {"query": "", "under": "features", "where": {"status": "draft"}},
         b.in_key_order(b.under("features") & b.where("status", "draft"))),
        ("exclusion only, under docs/adr", {"query": "-quillfeather", "under": "docs/adr"},
         b.in_key_order(b.under("docs/adr") - term("quillfeather"))),
        # words and filters: ranked
        ("quillfeather under docs/adr", {"query": "quillfeather", "under": "docs/adr"},
         term("quillfeather") & b.under("docs/adr")),
        ("quillfeather under docs", {"query": "quillfeather", "under": "docs"}, term("quillfeather") & b.under("docs")),
        ("zurichsee under notes", {"query": "zurichsee", "under": "notes"}, term("zurichsee") & b.under("notes")),
        ("quillfeather where status=open", {"query": "quillfeather", "where": {"status": "open"}},
         term("quillfeather") & b.where("status", "open")),
        ("PLAN-0042 under features where tags has sync",
         {"query": "PLAN-0042", "under": "features", "where": {"tags": "sync"}},
         term("PLAN-0042") & b.under("features") & b.where("tags", "sync")),
        # the query language
        ("both words", {"query": "quillfeather zurichsee"}, term("quillfeather") & term("zurichsee")),
        ("exclusion", {"query": "quillfeather -marzipanic"}, term("quillfeather") - term("marzipanic")),
        ("two exclusions", {"query": "quillfeather -marzipanic -zurichsee"},
         term("quillfeather") - term("marzipanic") - term("zurichsee")),
        ("excluded phrase", {"query": 'amber -"amber lantern"'}, term("amber") - term("amber lantern")),
        ("either", {"query": "glimmerwick OR brontosaurine"}, term("glimmerwick") | term("brontosaurine")),
        ("either, then both", {"query": "glimmerwick OR brontosaurine quillfeather"},
         (term("glimmerwick") | term("brontosaurine")) & term("quillfeather")),
        # No document holds all three words: relaxed to those with any (`or` among them).
        ("lower-case or is a word", {"query": "glimmerwick or brontosaurine"},
         (term("glimmerwick") & term("or") & term("brontosaurine"))
         or (term("glimmerwick") | term("or") | term("brontosaurine"))),
        ("phrase", {"query": '"amber lantern"'}, term("amber lantern")),
        ("phrase, other case", {"query": '"AMBER LANTERN"'}, term("amber lantern")),
        ("prefix", {"query": "zorbl*"}, term("zorbl", prefix=True)),
        ("prefix of a planted word", {"query": "quillfeath*"}, term("quillfeath", prefix=True)),
        ("prefix phrase", {"query": '"amber lant"*'}, term("amber lant", prefix=True)),
        ("version with its prefix", {"query": "v9*"}, term("v9", prefix=True)),
        ("a URI is searched by its key", {"query": "orchestra://features/PLAN-0042-rollout"},
         term("features/PLAN-0042-rollout")),
    ]
    for label, _, expected in cases:
        if label != "lower-case or is a word" and "Open" not in label:
            assert expected, f"generator: the reference of {label!r} is empty"

    async def body(client: Client) -> tuple[dict[str, Any], list[Run]]:
        schema = await output_schema(client)
        runs = [await search_all(client, label, args) for label, args, _ in cases]
        # The default limit is 20.
        runs.append(await search_all(client, "default limit", {"query": "quillfeather"}, limit=20))
        first = await client.call_tool("search", {"query": "quillfeather"})
        assert len(first.structured_content["hits"]) == min(20, len(term("quillfeather")))
        return schema, runs

    schema, runs = with_client(b.db, "legacy", body)
    problems: list[str] = []
    for (label, _, expected), run in zip(cases, runs):
        problems += check_run(b, schema, run, expected)
    problems += check_run(b, schema, runs[-1], term("quillfeather"), limit=20)
    report(problems)


# --------------------------------------------------------------------------------------
# snippets (one handshake session)


def test_snippets_show_the_match(backlog: Backlog) -> None:
    """A hit whose body holds the match shows it, marked `**…**`, within the snippet's ~200
    characters; a hit matched only by key, title or description shows the start of its body past
    the frontmatter (no marks) or a marked excerpt of its description; a binary document shows none."""
    searches = [(w.query, w.query, False) for w in WORDS] + [('"amber lantern"', "amber lantern", False),
                                                              ("zorbl*", "zorbl", True)]

    async def body(client: Client) -> list[Run]:
        return [await search_all(client, f"snippet {q!r}", {"query": q}, limit=100) for q, _, _ in searches]

    runs = with_client(backlog.db, "legacy", body)
    problems: list[str] = []
    for run, (_, word, prefix) in zip(runs, searches):
        problems += snippet_problems(backlog, run, word, prefix)
    report(problems)


# --------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_bad_arguments_and_unknown_tool(backlog: Backlog, mode: str) -> None:
    async def body(client: Client) -> list[tuple[str, Any]]:
        out = []
        for label, args in [
            ("limit 0", {"query": "quillfeather", "limit": 0}),
            ("limit 101", {"query": "quillfeather", "limit": 101}),
            ("no query", {"under": "docs"}),
            ("unknown prefix", {"query": "quillfeather", "under": "featurez"}),
            ("where not an object", {"query": "", "where": "status=open"}),
            ("unknown argument", {"query": "quillfeather", "max": 3}),
        ]:
            out.append((label, await client.call_tool("search", args)))
        # A cursor of one search given to another.
        page = await client.call_tool("search", {"query": "quillfeather", "limit": 2})
        cursor = page.structured_content["nextCursor"]
        out.append(("cursor of another search", await client.call_tool("search", {"query": "zurichsee", "cursor": cursor})))
        out.append(("garbage cursor", await client.call_tool("search", {"query": "zurichsee", "cursor": "not-a-cursor"})))
        with pytest.raises(MCPError) as info:
            await client.call_tool("find", {"query": "quillfeather"})
        out.append(("unknown tool", info.value))
        # The session is still usable.
        again = await client.call_tool("search", {"query": "fjordbyte"})
        out.append(("after the errors", again))
        return out

    results = dict(with_client(backlog.db, mode, body))
    for label in ("limit 0", "limit 101", "no query", "unknown prefix", "where not an object", "unknown argument",
                  "cursor of another search", "garbage cursor"):
        result = results[label]
        assert result.is_error is True, f"{label}: not isError: {result}"
        assert result.content and isinstance(result.content[0], TextContent) and result.content[0].text, label
        assert not result.structured_content, f"{label}: structuredContent on an error: {result.structured_content}"
    assert "limit" in results["limit 0"].content[0].text, results["limit 0"].content[0].text
    err = results["unknown tool"]
    assert err.code == -32602, f"unknown tool: error {err.code} {err.message!r}"
    again = results["after the errors"]
    assert not again.is_error and {h["uri"] for h in again.structured_content["hits"]} == backlog.term("fjordbyte")


# --------------------------------------------------------------------------------------
# a re-import after edits, seen by a session that stays open


@pytest.mark.parametrize("backend", BACKENDS)
def test_reimport_after_edits(tmp_path: Path, backend: str) -> None:
    rng = random.Random(SEED + 1)
    root = tmp_path / "project"
    docs = [d for d in generate_docs(rng) if d.prefix != "features" or d.id < "FEAT-0040"]
    text_docs = [d for d in docs if d.is_text]
    old_docs = rng.sample(text_docs, 12)
    for doc in old_docs:
        _insert(rng, doc, "tessellane")
    for doc in docs:
        doc.write(root)
    db = new_db(tmp_path, "reimport", backend)
    run_import(root, db)
    before = Backlog(root, db, [copy.deepcopy(d) for d in docs])  # as imported: the edits below change docs
    expected_before = [
        before.term("tessellane"), set(),
        before.in_key_order(before.where("status", "open")),
        before.in_key_order(before.under("notes")),
    ]
    assert len(expected_before[0]) == 12 and before.term("quokkaform") == set()

    # The edits: three documents lose the old word and gain a new one, two holding it are deleted,
    # one new document holds the new word, one document's status changes.
    changed, deleted = old_docs[:3], old_docs[3:5]
    for doc in changed:
        doc.paragraphs = [p.replace("tessellane", "quokkaform") for p in doc.paragraphs]
    for doc in deleted:
        assert doc.path is not None
        doc.path.unlink()
        docs.remove(doc)
    added = Doc("notes", "added/quokka", "heading", heading="Quokkaform arrives", paragraphs=["a quokkaform note"])
    docs.append(added)
    flipped = next(d for d in docs if d.frontmatter and d.frontmatter.get("status") == "open" and d not in old_docs)
    flipped.frontmatter["status"] = "closed"
    for doc in [*changed, added, flipped]:
        doc.write(root)
        assert doc.path is not None
        st = doc.path.stat()
        os.utime(doc.path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # a clearly newer mtime
    after = Backlog(root, db, docs)
    expected_after = [
        after.term("tessellane"), after.term("quokkaform"),
        after.in_key_order(after.where("status", "open")),
        after.in_key_order(after.under("notes")),
    ]
    assert expected_after[0] == expected_before[0] - {d.uri for d in changed + deleted}
    assert expected_after[1] == {d.uri for d in changed} | {added.uri}

    async def body(client: Client) -> tuple[dict[str, Any], list[Run], list[Run]]:
        schema = await output_schema(client)
        queries = [("tessellane", {"query": "tessellane"}), ("quokkaform", {"query": "quokkaform"}),
                   ("status=open", {"query": "", "where": {"status": "open"}}),
                   ("everything", {"query": "", "under": "notes"})]
        first = [await search_all(client, f"before: {label}", args, limit=4) for label, args in queries]
        await anyio.to_thread.run_sync(run_import, root, db)
        second = [await search_all(client, f"after: {label}", args, limit=4) for label, args in queries]
        return schema, first, second

    schema, first, second = with_client(db, "legacy", body)
    problems: list[str] = []
    for run, expected in zip(first, expected_before):
        problems += check_run(before, schema, run, expected, limit=4)
    for run, expected in zip(second, expected_after):
        problems += check_run(after, schema, run, expected, limit=4)
    report(problems)
    gone = {d.uri for d in deleted}
    assert not gone & {u for run in second for u in run.uris}, "a deleted document is still a hit"
    assert flipped.uri in first[2].uris and flipped.uri not in second[2].uris


# --------------------------------------------------------------------------------------
# questions: words spread over documents, and a pasted sentence

QUESTION = ("vantablick", "orrimoss", "quenchard", "duskmallow", "pibroche", "thrumwell")
RELAXED_TEXT = "No document has all of these words; these have some of them."
MAX_TERMS = 32


def expected_answer(b: Backlog, words: list[str]) -> tuple[set[str], bool, list[str] | None]:
    """The reference for a query of plain words: the hits, whether relaxed, and the terms used when
    it has more than 32 (the 32 in the fewest documents, ties to the earlier, in query order)."""
    distinct = list(dict.fromkeys(words))
    found = [b.term(w) for w in distinct]
    used = None
    if len(distinct) > MAX_TERMS:
        kept = sorted(sorted(range(len(distinct)), key=lambda i: (len(found[i]), i))[:MAX_TERMS])
        used = [distinct[i] for i in kept]
        found = [found[i] for i in kept]
    strict = set.intersection(*found)
    if strict or len(found) < 2:
        return strict, False, used
    union = set.union(*found)
    return (union, True, used) if union else (strict, False, used)


@pytest.mark.parametrize("backend", BACKENDS)
def test_questions_whose_words_are_spread_over_documents_find_them(tmp_path: Path, backend: str) -> None:
    rng = random.Random(SEED + 2)
    root = tmp_path / "project"
    docs = generate_docs(rng)
    text_docs = [d for d in docs if d.is_text]
    # Each of 40 documents holds some of the question's words, never all of them.
    holders = rng.sample(text_docs, 40)
    for doc in holders:
        for word in rng.sample(QUESTION, rng.randint(1, len(QUESTION) - 1)):
            _insert(rng, doc, word)
    for doc in docs:
        doc.write(root)
    db = new_db(tmp_path, "questions", backend)
    run_import(root, db)
    b = Backlog(root, db, docs)
    assert not set.intersection(*(b.term(w) for w in QUESTION)), "generator: a document holds every word"
    question = " ".join(QUESTION)
    any_word = set.union(*(b.term(w) for w in QUESTION))
    assert 20 < len(any_word) <= 40, f"generator: {len(any_word)} documents hold a word"
    # A pasted sentence of 60 different words: the question's, common ones, and words no document has.
    absent = [f"pastedword{unique}" for unique in "abcdefghijklmnopqrstuvwxyz"[:20]]
    common = list(dict.fromkeys(FILLER))
    sentence_words = (list(QUESTION) + common + absent)[:60]
    sentence_words += [f"extra{c}word" for c in "abcdefghijklmnopqrstuvwxyz"][: 60 - len(sentence_words)]
    assert len(set(sentence_words)) == 60
    sentence = " ".join(sentence_words)
    assert len(sentence.encode()) <= 4096
    sentence_hits, sentence_relaxed, sentence_terms = expected_answer(b, sentence_words)
    assert sentence_relaxed and sentence_terms and len(sentence_terms) == MAX_TERMS
    # Two words that a document holds together: answered strictly.
    together = QUESTION[0]
    holder = next(d for d in holders if d.uri in b.term(together))

    cases: list[tuple[str, dict[str, Any], set[str], bool]] = [
        ("question", {"query": question}, any_word, True),
        ("question under features", {"query": question, "under": "features"},
         any_word & b.under("features"), True),
        ("question where status=open", {"query": question, "where": {"status": "open"}},
         any_word & b.where("status", "open"), True),
        ("question as a phrase", {"query": f'"{QUESTION[0]} {QUESTION[1]}" ' + " ".join(QUESTION[2:])},
         b.term(f"{QUESTION[0]} {QUESTION[1]}") & set.intersection(*(b.term(w) for w in QUESTION[2:])), False),
        ("question with an exclusion", {"query": question + " -nowhereatall"}, set(), False),
        ("question with OR", {"query": f"{QUESTION[0]} OR nowhereatall " + " ".join(QUESTION[1:])},
         set.intersection(*(b.term(w) for w in QUESTION)), False),
        ("question where status=nope", {"query": question, "where": {"status": "nope"}}, set(), False),
        ("two words one document holds", {"query": f"{together} {holder.id.split('/')[-1]}"},
         b.term(together) & b.term(holder.id.split('/')[-1]), False),
        ("a pasted sentence", {"query": sentence}, sentence_hits, sentence_relaxed),
    ]

    async def body(client: Client) -> tuple[dict[str, Any], list[Run]]:
        schema = await output_schema(client)
        return schema, [await search_all(client, f"[{backend}] {label}", args, limit=5) for label, args, _, _ in cases]

    schema, runs = with_client(db, "auto", body)
    problems: list[str] = []
    for (label, args, expected, relaxed), run in zip(cases, runs):
        assert expected or not relaxed, label
        problems += check_run(b, schema, run, expected, limit=5)
        for n, page in enumerate(run.pages, 1):
            sc = page.structured_content
            text = page.content[0].text
            # `relaxed` is present only when true.
            if sc.get("relaxed", False) is not relaxed or sc.get("relaxed") is False:
                problems.append(f"{run.label}: page {n}: relaxed {sc.get('relaxed')!r}, expected {relaxed}")
            if (RELAXED_TEXT in text) != relaxed:
                problems.append(f"{run.label}: page {n}: text {text[:120]!r}")
            if args["query"] == sentence:
                if sc.get("terms") != sentence_terms:
                    problems.append(f"{run.label}: page {n}: terms {sc.get('terms')}, reference {sentence_terms}")
                named = "The query has 60 different terms; it was answered from the 32 found in the fewest documents: "
                if not text.startswith(named + " ".join(sentence_terms) + "."):
                    problems.append(f"{run.label}: page {n}: text {text[:200]!r}")
            elif "terms" in sc:
                problems.append(f"{run.label}: page {n}: terms {sc['terms']} for a short query")
    report(problems)
