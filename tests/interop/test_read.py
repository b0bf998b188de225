"""Interop tests: the `read`, `outline` and `list` tools of `orchestra serve`, through the official
Python MCP client (mcp 2.3.0), in the handshake era ("legacy") and in 2026-07-28, on a SQLite file
and on a PostgreSQL database.

The project holds a generated 5 MB design document (frontmatter with comments, headings of every
level, ATX and setext, headings inside fenced code and in the frontmatter that are none, CRLF
lines, a line of 60,000 characters, multi-byte characters), a small one re-imported with a change
(so that it has a version 1 and 2), a binary document and some others.

- `read` by lines, followed part by part (`nextOffset`, `nextColumn`) under the default cap and
  under `maxChars: 1000`, reassembles the exact text; no part's text exceeds its cap; a second text
  block and `truncated` say when more remains; `version` and `hash` name what was read.
- `read` by section equals the file's lines from the heading to the next heading of its level or
  higher, which a reference parser (markdown-it-py, CommonMark) finds; so does `outline`.
- `list` pages through every document in key order, and `under` keeps to a folder.
- A binary document is an error naming its size and `resources/read`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from mcp import Client
from mcp.types import TextContent

from test_python_client import BACKENDS, new_db, run_import, with_client

MODES = ["legacy", "2026-07-28"]
BIG = "docs/design/big.md"
SEED = 20261204


def big_document() -> str:
    rng = random.Random(SEED)
    words = ["sync", "offline", "queue", "drain", "retry", "ledger", "größe", "naïve", "東京", "🎻"]
    out = ["---\n", "title: The big design\n", "# a comment, not a heading\n", "tags: [design, sync]\n", "---\n"]
    section = 0
    while sum(len(s) for s in out) < 5_000_000:
        section += 1
        out.append(f"# Part {section}\n\n")
        for sub in range(1, 4):
            if sub == 2:
                out.append(f"Setext {section}.{sub}\r\n---------\r\n\r\n")
            else:
                out.append(f"## Chapter {section}.{sub} `code`\n\n")
            for para in range(rng.randint(3, 8)):
                line = " ".join(rng.choice(words) for _ in range(rng.randint(5, 40)))
                out.append(line + ("\r\n" if para % 3 == 0 else "\n"))
            out.append("```\n# not a heading, in code\n```\n\n")
            out.append(f"### Detail {section}.{sub}\n\n" + "detail text\n" * rng.randint(1, 20) + "\n")
        if section == 3:
            out.append("é" * 30_000 + "x" * 30_000 + "\n\n")
    out.append("The end, without a newline")
    return "".join(out)


@dataclass
class Project:
    root: Path
    db: Any
    old_small: str


@pytest.fixture(scope="module", params=BACKENDS)
def project(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Project:
    base = tmp_path_factory.mktemp("read")
    root = base / "project"
    (root / "docs" / "design").mkdir(parents=True)
    (root / "features").mkdir()
    (root / "notes").mkdir()
    (root / BIG).write_bytes(big_document().encode())
    for n in range(1, 24):
        (root / "features" / f"FEAT-{n:03}.md").write_text(f"---\ntitle: Feature {n}\n---\n# Feature {n}\n")
    (root / "notes" / "blob.md").write_bytes(b"\xff\xfe binary \x00\x01" * 10)
    old_small = "# Small\n\nfirst\n"
    (root / "notes" / "small.md").write_text(old_small)
    db = new_db(base, "read", request.param)
    run_import(root, db)
    (root / "notes" / "small.md").write_text("# Small\n\nsecond\n")
    run_import(root, db)
    return Project(root, db, old_small)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def read_all(client: Client, args: dict[str, Any], cap: int) -> tuple[str, list[dict[str, Any]]]:
    """Follows a read part by part; returns the text and every part's structuredContent."""
    whole, parts = "", []
    args = dict(args)
    limit = args.get("limit", 0)
    while True:
        result = await client.call_tool("read", args)
        assert not result.is_error, result.content
        sc = result.structured_content
        blocks = texts(result)
        assert len(blocks[0]) <= cap, (len(blocks[0]), sc)
        more = "nextOffset" in sc
        # The text is a block of its own; a second says when more remains.
        assert len(blocks) == (2 if more else 1), (blocks[1:], sc)
        if more:
            assert "call read with" in blocks[1], blocks[1]
        whole += blocks[0]
        parts.append(sc)
        # The rest of the range asked for: a limit ends it, and so does a section.
        if not sc["truncated"]:
            return whole, parts
        if "limit" in args:
            end = parts[0]["from"] + limit - 1
            args["limit"] = end - sc["nextOffset"] + 1
        args["offset"] = sc["nextOffset"]
        args["column"] = sc.get("nextColumn", 0)


def reference_headings(text: str) -> list[tuple[int, str, int]]:
    """(level, text, line) of every heading, from markdown-it-py's CommonMark parse of the body."""
    body_line = 0
    if text.startswith("---\n"):
        close = text.index("\n---\n", 3)
        body_line = text[: close + 5].count("\n")
    body = "\n".join(text.split("\n")[body_line:])
    tokens = MarkdownIt("commonmark").parse(body)
    found = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[i + 1]
            words = "".join(c.content for c in inline.children if c.type in ("text", "code_inline"))
            found.append((int(token.tag[1]), words.strip(), body_line + token.map[0] + 1))
    return found


@pytest.mark.parametrize("mode", MODES)
def test_read_by_lines_reassembles_the_exact_text(project: Project, mode: str) -> None:
    expected = (project.root / BIG).read_bytes().decode()
    digest = None

    async def body(client: Client) -> None:
        nonlocal digest
        uri = "orchestra://docs/design/big"
        whole, parts = await read_all(client, {"uri": uri}, 40_000)
        assert whole == expected
        assert len(parts) > 100
        assert all(p["truncated"] for p in parts[:-1]) and not parts[-1]["truncated"]
        assert {p["version"] for p in parts} == {1}
        digest = parts[0]["hash"]
        lines = expected.splitlines(keepends=True)
        assert parts[0]["totalLines"] == len(lines)
        # The long line of 60,000 characters is cut, and goes on at its column.
        assert any("nextColumn" in p for p in parts), "no part cut a line"
        # By lines: a window of 10 lines, and where it goes on.
        result = await client.call_tool("read", {"uri": uri, "offset": 7, "limit": 10})
        assert texts(result)[0] == "".join(lines[6:16])
        assert result.structured_content["nextOffset"] == 17
        assert not result.structured_content["truncated"]
        # A smaller cap, on the part with the long line.
        long_line = next(i for i, line in enumerate(lines) if len(line) > 50_000) + 1
        small, parts = await read_all(client, {"uri": uri, "offset": long_line, "limit": 3, "maxChars": 1000}, 1000)
        assert small == "".join(lines[long_line - 1 : long_line + 2])
        assert len(parts) >= 60

    with_client(project.db, mode, body)
    assert len(digest) == 64


@pytest.mark.parametrize("mode", MODES)
def test_outline_and_sections_match_a_reference_parser(project: Project, mode: str) -> None:
    expected = (project.root / BIG).read_bytes().decode()
    reference = reference_headings(expected)
    lines = expected.splitlines(keepends=True)

    async def body(client: Client) -> None:
        uri = "orchestra://docs/design/big"
        result = await client.call_tool("outline", {"uri": uri})
        assert not result.is_error, result.content
        sc = result.structured_content
        assert sc["size"] == len(expected.encode()) and sc["totalLines"] == len(lines)
        assert sc["frontmatterKeys"] == ["title", "tags"]
        got = [(h["level"], h["text"], h["line"]) for h in sc["headings"]]
        # The listing stays under a read's cap: what it shows is a prefix of the reference.
        assert sc["truncated"] == (len(got) < len(reference))
        assert got == reference[: len(got)] and len(got) > 100
        # Sections: each up to the next heading of its level or higher.
        for index in [0, 1, 2, 3, len(got) - 1]:
            heading = sc["headings"][index]
            level, _, line = reference[index]
            end = next((h[2] - 1 for h in reference[index + 1 :] if h[0] <= level), len(lines))
            assert heading["endLine"] == end, heading
            section, parts = await read_all(client, {"uri": uri, "section": heading["path"]}, 40_000)
            assert section == "".join(lines[line - 1 : end]), heading
            assert parts[0]["section"] == heading["path"]
        # A heading's text alone names it; a text no heading has is an error.
        result = await client.call_tool("read", {"uri": uri, "section": "Detail 1.1"})
        assert not result.is_error
        result = await client.call_tool("read", {"uri": uri, "section": "No such heading"})
        assert result.is_error and "no such heading" in texts(result)[0]

    with_client(project.db, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_versions_binary_and_list(project: Project, mode: str) -> None:
    async def body(client: Client) -> None:
        now = await client.call_tool("read", {"uri": "orchestra://notes/small"})
        assert texts(now)[0] == (project.root / "notes/small.md").read_text()
        assert now.structured_content["version"] == 2
        digest = now.structured_content["hash"]
        assert len(digest) == 64 and int(digest, 16) >= 0
        old = await client.call_tool("read", {"uri": "orchestra://notes/small?version=1"})
        assert texts(old)[0] == project.old_small and old.structured_content["version"] == 1
        assert old.structured_content["hash"] != digest
        missing = await client.call_tool("read", {"uri": "orchestra://notes/small?version=9"})
        assert missing.is_error and "no version 9" in texts(missing)[0]
        blob = await client.call_tool("read", {"uri": "orchestra://notes/blob"})
        size = (project.root / "notes/blob.md").stat().st_size
        assert blob.is_error and f"{size} bytes" in texts(blob)[0] and "resources/read" in texts(blob)[0]
        gone = await client.call_tool("read", {"uri": "orchestra://features/FEAT-999"})
        assert gone.is_error and "no such document" in texts(gone)[0]

        listed, cursor = [], None
        while True:
            args: dict[str, Any] = {"limit": 7}
            if cursor:
                args["cursor"] = cursor
            page = await client.call_tool("list", args)
            assert not page.is_error, page.content
            listed += page.structured_content["documents"]
            cursor = page.structured_content.get("nextCursor")
            if not cursor:
                break
        uris = [d["uri"] for d in listed]
        expected = (
            ["orchestra://docs/design/big"]
            + [f"orchestra://features/FEAT-{n:03}" for n in range(1, 24)]
            + ["orchestra://notes/blob", "orchestra://notes/small"]
        )
        assert uris == expected
        small = listed[-1]
        assert small["version"] == 2 and small["size"] == len("# Small\n\nsecond\n") and small["updated"].endswith("Z")
        page = await client.call_tool("list", {"under": "features", "limit": 200})
        assert [d["uri"] for d in page.structured_content["documents"]] == expected[1:24]
        assert "nextCursor" not in page.structured_content

    with_client(project.db, mode, body)
