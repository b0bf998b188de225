"""Interop tests: the write tools of `orchestra serve` (`create`, `write`, `edit`, `move`, `delete`),
through the official Python MCP client (mcp 2.3.0), in the handshake era ("legacy") and in
2026-07-28, on a SQLite file and on a PostgreSQL database.

Each test starts from a small project of its own, imported, served with `--project DIR`:

- every edit kind (`replace`, `replace` with `all`, `append`, `prepend`, `section`, a nested
  and a setext `section`, `frontmatter` set, add and remove, several edits in one call) on files
  with CRLF line endings, without a final newline, with a UTF-8 BOM, and with a frontmatter of
  comments, odd spacing, block scalars and sequences: after each call the file's bytes equal the
  bytes written out by hand in CASES below (never computed by the test), and `resources/read`
  returns the same text with `_meta` `orchestra/version` and `orchestra/hash` equal to the tool's
  `version` and `hash`;
- `create` (by uri, and allocated `under` a numbered folder and a slugged one), `write`, `move`
  and `delete`, the same way, and their refusals (exists, target exists);
- `dryRun: true` answers the diff the edit then makes and writes nothing;
- a stale `ifVersion` is refused ("changed since version") by every tool that takes it, and so is
  one that an outside write to the file made stale after it was read (even one of the same size
  with its mtime put back); nothing is written;
- a file an editor made or removed without an import is never clobbered: `create` and `move` onto
  it are refused, an edit of a removed one creates nothing;
- a failing edit among several writes none of them;
- the declared annotations; `--read-only` declares no write tool and refuses a call;
- after every test, `orchestra import DIR --json` finds nothing new, updated or removed: the
  database equals the folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import ResourceLink, TextContent, TextResourceContents

from test_python_client import BACKENDS, ORCHESTRA_BIN, new_db, run_import, with_client

MODES = ["legacy", "2026-07-28"]
WRITE_TOOLS = ["create", "write", "edit", "move", "delete"]
BOM = "\ufeff"


@dataclass(frozen=True)
class Case:
    """One edit call on a document of its own: the file's bytes before, the edits, the bytes after."""

    name: str
    before: str
    edits: list[dict[str, Any]]
    after: str

    @property
    def path(self) -> str:
        return f"notes/case/{self.name}.md"

    @property
    def uri(self) -> str:
        return f"orchestra://notes/case/{self.name}"


# A CRLF document with a frontmatter whose line has a comment.
CRLF = (
    "---\r\n"
    "title: Sync\r\n"
    "status: open # triage\r\n"
    "---\r\n"
    "# Sync\r\n"
    "\r\n"
    "## Plan\r\n"
    "old plan\r\n"
    "## Notes\r\n"
    "note one\r\n"
    "note one again\r\n"
)
# LF, no final newline, no frontmatter.
NO_FINAL = "# Photos\n\nAttach photos.\n\n## Open\n\nSize limit?"
# A BOM, LF, no frontmatter.
BOM_DOC = BOM + "# Bom\n\nfirst\n"
# A BOM, CRLF, a frontmatter.
BOM_CRLF = BOM + "---\r\ntitle: B\r\n---\r\nbody\r\n"
# A frontmatter with comments, runs of spaces, a flow list, a nested map, a blank line.
ODD = (
    "---\n"
    "# who owns this\n"
    "title:   Odd   spacing\n"
    "status:    draft   # keep me\n"
    "tags: [a,  b]\n"
    "owner:\n"
    "  name: Ana\n"
    "  team: field\n"
    "\n"
    "# end of keys\n"
    "---\n"
    "# Odd\n"
    "\n"
    "Body.\n"
)

CASES = [
    # CRLF: inserted text gets CRLF; an OLD typed with \n matches the file's \r\n.
    Case(
        "crlf-replace",
        CRLF,
        [{"replace": "old plan", "with": "new plan\nsecond"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nnew plan\r\nsecond\r\n## Notes\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-replace-lf-old",
        CRLF,
        [{"replace": "old plan\n## Notes", "with": "plan\n## Later"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nplan\r\n## Later\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-replace-all",
        CRLF,
        [{"replace": "note one", "with": "n1", "all": True}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\nn1\r\nn1 again\r\n",
    ),
    Case(
        "crlf-append",
        CRLF,
        [{"append": "tail\n"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\nnote one\r\nnote one again\r\ntail\r\n",
    ),
    Case(
        "crlf-prepend",
        CRLF,
        [{"prepend": "> lead"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n> lead\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-section",
        CRLF,
        [{"section": "Plan", "with": "a\nb\n"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\na\r\nb\r\n## Notes\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-section-nested-last",
        CRLF,
        # The last section: its old body ended with a line ending, so WITH gets one.
        [{"section": "Sync > Notes", "with": "done"}],
        "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\ndone\r\n",
    ),
    Case(
        "crlf-frontmatter-set-and-add",
        CRLF,
        [{"frontmatter": {"status": "done", "owner": "Ana Lima"}}],
        "---\r\ntitle: Sync\r\nstatus: done # triage\r\nowner: Ana Lima\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-frontmatter-remove",
        CRLF,
        [{"frontmatter": {"status": None, "missing": None}}],
        "---\r\ntitle: Sync\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nold plan\r\n## Notes\r\nnote one\r\nnote one again\r\n",
    ),
    Case(
        "crlf-several",
        CRLF,
        # In order, each on the result of the one before.
        [
            {"replace": "old plan", "with": "plan"},
            {"replace": "plan", "with": "the plan"},
            {"append": "tail"},
            {"frontmatter": {"title": "Sync 2"}},
        ],
        "---\r\ntitle: Sync 2\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
        "## Plan\r\nthe plan\r\n## Notes\r\nnote one\r\nnote one again\r\ntail",
    ),
    Case(
        "crlf-no-block-frontmatter",
        "# T\r\n\r\nx\r\n",
        # A new block takes the file's line endings.
        [{"frontmatter": {"a": "b"}}],
        "---\r\na: b\r\n---\r\n# T\r\n\r\nx\r\n",
    ),
    Case(
        "crlf-setext-section",
        "Title\r\n=====\r\n\r\nold\r\n\r\nNext\r\n====\r\nkeep\r\n",
        [{"section": "Title", "with": "new\n"}],
        "Title\r\n=====\r\nnew\r\nNext\r\n====\r\nkeep\r\n",
    ),
    Case(
        "crlf-replace-with-crlf",
        "x\r\nold\r\n",
        # A \r\n already in the new text stays one.
        [{"replace": "old", "with": "p\r\nq"}],
        "x\r\np\r\nq\r\n",
    ),
    Case(
        "mixed-endings-append",
        # The first line's ending decides: LF.
        "a\nb\r\n",
        [{"append": "c\n"}],
        "a\nb\r\nc\n",
    ),
    # No final newline: it stays absent unless an edit's text ends with one.
    Case(
        "nofinal-replace",
        NO_FINAL,
        [{"replace": "Size limit?", "with": "Size limit: 10 MB."}],
        "# Photos\n\nAttach photos.\n\n## Open\n\nSize limit: 10 MB.",
    ),
    Case(
        "nofinal-append",
        NO_FINAL,
        [{"append": "more"}],
        "# Photos\n\nAttach photos.\n\n## Open\n\nSize limit?\nmore",
    ),
    Case(
        "nofinal-append-newline",
        NO_FINAL,
        [{"append": "more\n"}],
        "# Photos\n\nAttach photos.\n\n## Open\n\nSize limit?\nmore\n",
    ),
    Case(
        "nofinal-prepend",
        NO_FINAL,
        [{"prepend": "lead\n"}],
        "lead\n# Photos\n\nAttach photos.\n\n## Open\n\nSize limit?",
    ),
    Case(
        "nofinal-section",
        NO_FINAL,
        [{"section": "Open", "with": "\nNone."}],
        "# Photos\n\nAttach photos.\n\n## Open\n\nNone.",
    ),
    Case(
        "nofinal-section-top",
        NO_FINAL,
        # A level-1 section runs to the end: "## Open" is inside it.
        [{"section": "Photos", "with": "Only this."}],
        "# Photos\nOnly this.",
    ),
    Case(
        "nofinal-frontmatter",
        NO_FINAL,
        # No block yet: one is added at the start.
        [{"frontmatter": {"status": "open"}}],
        "---\nstatus: open\n---\n# Photos\n\nAttach photos.\n\n## Open\n\nSize limit?",
    ),
    Case(
        "nofinal-after-block",
        "---\ntitle: T\n---",
        # The closing line without a line ending: one is added before the text.
        [{"prepend": "x"}],
        "---\ntitle: T\n---\nx\n",
    ),
    Case("multibyte-replace", "naïve 東京 🎻", [{"replace": "東京", "with": "Tōkyō"}], "naïve Tōkyō 🎻"),
    # A BOM stays first; it is no part of the first heading.
    Case("bom-replace", BOM_DOC, [{"replace": "first", "with": "1st"}], BOM + "# Bom\n\n1st\n"),
    Case("bom-append", BOM_DOC, [{"append": "last\n"}], BOM + "# Bom\n\nfirst\nlast\n"),
    Case("bom-prepend", BOM_DOC, [{"prepend": "lead\n"}], BOM + "lead\n# Bom\n\nfirst\n"),
    Case("bom-section", BOM_DOC, [{"section": "Bom", "with": "\nsecond\n"}], BOM + "# Bom\n\nsecond\n"),
    Case(
        "bom-frontmatter",
        BOM_DOC,
        [{"frontmatter": {"title": "Bom note"}}],
        BOM + "---\ntitle: Bom note\n---\n# Bom\n\nfirst\n",
    ),
    Case(
        "bom-crlf-frontmatter",
        BOM_CRLF,
        # New keys at the end of the block. (Given in key order: the order of a JSON object's keys
        # does not reach the server, whose arguments are a map sorted by key.)
        [{"frontmatter": {"points": 3, "tags": ["sync", "mobile"]}}],
        BOM + "---\r\ntitle: B\r\npoints: 3\r\ntags: [sync, mobile]\r\n---\r\nbody\r\n",
    ),
    Case("bom-crlf-prepend", BOM_CRLF, [{"prepend": "lead"}], BOM + "---\r\ntitle: B\r\n---\r\nlead\r\nbody\r\n"),
    Case("bom-crlf-append", BOM_CRLF, [{"append": "end\n"}], BOM + "---\r\ntitle: B\r\n---\r\nbody\r\nend\r\n"),
    Case(
        "bom-crlf-nofinal-several",
        BOM + "# H\r\nbody",
        [{"frontmatter": {"k": "v"}}, {"prepend": "p"}, {"section": "H", "with": "z"}],
        BOM + "---\r\nk: v\r\n---\r\np\r\n# H\r\nz",
    ),
    # A frontmatter with comments and odd spacing: only the named keys' lines change.
    Case(
        "odd-set-commented",
        ODD,
        [{"frontmatter": {"status": "done"}}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus: done   # keep me\ntags: [a,  b]\n"
        "owner:\n  name: Ana\n  team: field\n\n# end of keys\n---\n# Odd\n\nBody.\n",
    ),
    Case(
        "odd-set-nested",
        ODD,
        # A key with continuation lines becomes one line; the blank line and comment after stay.
        [{"frontmatter": {"owner": {"name": "Bo"}}}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus:    draft   # keep me\ntags: [a,  b]\n"
        "owner: {name: Bo}\n\n# end of keys\n---\n# Odd\n\nBody.\n",
    ),
    Case(
        "odd-remove",
        ODD,
        [{"frontmatter": {"tags": None, "owner": None}}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus:    draft   # keep me\n"
        "\n# end of keys\n---\n# Odd\n\nBody.\n",
    ),
    Case(
        "odd-add",
        ODD,
        [{"frontmatter": {"priority": 2}}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus:    draft   # keep me\ntags: [a,  b]\n"
        "owner:\n  name: Ana\n  team: field\n\n# end of keys\npriority: 2\n---\n# Odd\n\nBody.\n",
    ),
    Case(
        "odd-quoted",
        ODD,
        # A value YAML would misread plain is double-quoted.
        [{"frontmatter": {"title": "a: b # c"}}],
        '---\n# who owns this\ntitle: "a: b # c"\nstatus:    draft   # keep me\ntags: [a,  b]\n'
        "owner:\n  name: Ana\n  team: field\n\n# end of keys\n---\n# Odd\n\nBody.\n",
    ),
    Case(
        "yaml-block-scalar",
        "---\ntitle: T\ndesc: |\n  line one\n  line two\nstatus: x\n---\nbody\n",
        [{"frontmatter": {"desc": "short"}}],
        "---\ntitle: T\ndesc: short\nstatus: x\n---\nbody\n",
    ),
    Case(
        "yaml-block-sequence",
        "---\ntags:\n- a\n- b\ntitle: T\n---\nx\n",
        [{"frontmatter": {"tags": None}}],
        "---\ntitle: T\n---\nx\n",
    ),
    Case(
        "yaml-values",
        "---\ntitle: T # kept\n---\n",
        # What YAML would read as another type or another string is quoted (keys given in key order).
        [
            {
                "frontmatter": {
                    **{"a": "yes", "b": True, "c": "123", "d": "", "e": "null", "f": "- x", "g": 1.5},
                    **{"h": "a\nb", "i": {"j": [1, "x y"]}, "title": None},
                }
            }
        ],
        '---\na: "yes"\nb: true\nc: "123"\nd: ""\ne: "null"\nf: "- x"\ng: 1.5\nh: "a\\nb"\ni: {j: [1, x y]}\n---\n',
    ),
    Case(
        "odd-prepend",
        ODD,
        [{"prepend": "lead\n"}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus:    draft   # keep me\ntags: [a,  b]\n"
        "owner:\n  name: Ana\n  team: field\n\n# end of keys\n---\nlead\n# Odd\n\nBody.\n",
    ),
    Case(
        "odd-section",
        ODD,
        [{"section": "Odd", "with": "\nNew body.\n"}],
        "---\n# who owns this\ntitle:   Odd   spacing\nstatus:    draft   # keep me\ntags: [a,  b]\n"
        "owner:\n  name: Ana\n  team: field\n\n# end of keys\n---\n# Odd\n\nNew body.\n",
    ),
]

# Other documents of every project.
OTHERS = {
    "features/FEAT-001.md": "# One\n",
    "features/FEAT-002.md": "# Two\n",
    "docs/adr/0006-offline-first.md": "# Offline first\n",
    "notes/crlf.md": CRLF,
    "notes/nofinal.md": NO_FINAL,
    "notes/bom.md": BOM_DOC,
    "notes/odd.md": ODD,
}


@dataclass
class Project:
    root: Path
    db: Path | str

    def bytes_of(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def serve(self, mode: str, body: Any, *args: str) -> Any:
        return with_client(self.db, mode, body, "--project", str(self.root), *args)


def make_project(tmp_path: Path, backend: str, name: str) -> Project:
    root = tmp_path / "project"
    for path, text in [*OTHERS.items(), *((case.path, case.before) for case in CASES)]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text.encode())
    db = new_db(tmp_path, name, backend)
    run_import(root, db)
    return Project(root, db)


@pytest.fixture(params=[(b, m) for b in BACKENDS for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Project, str]]:
    """A fresh project on one backend, and the client mode; the database equals the folder after."""
    backend, mode = request.param
    name = f"write_{request.function.__name__.removeprefix('test_')[:20]}_{mode[:2]}"
    project = make_project(tmp_path, backend, name)
    yield project, mode
    assert_in_sync(project)


def assert_in_sync(project: Project) -> None:
    """`orchestra import DIR --json` finds nothing to do: the database equals the folder."""
    proc = subprocess.run(
        [str(ORCHESTRA_BIN), "import", str(project.root), "--db", str(project.db), "--json"],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    report = json.loads(proc.stdout)
    assert (report["new"], report["updated"], report["removed"]) == (0, 0, 0), report


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def ok(result: Any) -> dict[str, Any]:
    """A write's answer: not an error, its structuredContent, and a resource_link unless removed."""
    assert not result.is_error, text_of(result)
    sc = result.structured_content
    assert isinstance(sc["diff"], str) and isinstance(sc["size"], int)
    links = [block for block in result.content if isinstance(block, ResourceLink)]
    if sc.get("removed") or sc.get("dryRun"):
        assert links == [] or [str(link.uri) for link in links] == [sc["uri"]], result.content
    else:
        assert [str(link.uri) for link in links] == [sc["uri"]], result.content
    return sc


def refused(result: Any, *words: str) -> str:
    assert result.is_error, result
    message = text_of(result)
    for word in words:
        assert word in message, message
    return message


async def read(client: Client, uri: str) -> tuple[bytes, int, str]:
    """resources/read: the text's bytes, `_meta` orchestra/version and orchestra/hash."""
    result = await client.read_resource(uri)
    [content] = result.contents
    assert isinstance(content, TextResourceContents), content
    meta = content.meta or {}
    return content.text.encode(), meta["orchestra/version"], meta["orchestra/hash"]


async def check(client: Client, project: Project, path: str, sc: dict[str, Any], expected: str) -> None:
    """The file holds exactly `expected`; resources/read and the answer agree with it."""
    data = expected.encode()
    assert project.bytes_of(path) == data, (path, project.bytes_of(path), data)
    assert sc["size"] == len(data)
    text, version, digest = await read(client, sc["uri"])
    assert text == data, (sc["uri"], text, data)
    assert (version, digest) == (sc["version"], sc["hash"]), (version, digest, sc)


async def unchanged(client: Client, project: Project, path: str, uri: str, data: bytes, version: int) -> None:
    assert project.bytes_of(path) == data, (path, project.bytes_of(path), data)
    text, now, _ = await read(client, uri)
    assert (text, now) == (data, version)


def test_every_edit_kind_is_byte_exact(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        for case in CASES:
            assert project.bytes_of(case.path) == case.before.encode()
            _, version, _ = await read(client, case.uri)
            assert version == 1
            sc = ok(await client.call_tool("edit", {"uri": case.uri, "edits": case.edits, "ifVersion": version}))
            assert sc["uri"] == case.uri and sc["version"] == 2, (case.name, sc)
            assert "dryRun" not in sc and sc["diff"].startswith(f"--- {case.uri}\n+++ {case.uri}\n@@ ")
            await check(client, project, case.path, sc, case.after)
        # The read tool names the same version.
        result = await client.call_tool("read", {"uri": CASES[0].uri})
        assert result.structured_content["version"] == 2
        assert result.content[0].text.encode() == CASES[0].after.encode()

    project.serve(mode, body)


def test_a_diff_is_unified_and_exact(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        uri = "orchestra://notes/bom"
        sc = ok(await client.call_tool("edit", {"uri": uri, "edits": [{"replace": "first", "with": "1st"}]}))
        assert sc["diff"] == f"--- {uri}\n+++ {uri}\n@@ -1,3 +1,3 @@\n {BOM}# Bom\n \n-first\n+1st\n"
        uri = "orchestra://notes/nofinal"
        sc = ok(await client.call_tool("edit", {"uri": uri, "edits": [{"append": "more"}]}))
        assert sc["diff"] == (
            f"--- {uri}\n+++ {uri}\n@@ -4,4 +4,5 @@\n \n ## Open\n \n-Size limit?\n"
            "\\ No newline at end of file\n+Size limit?\n+more\n\\ No newline at end of file\n"
        )

    project.serve(mode, body)


def test_create_write_move_delete_are_byte_exact(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        # create by uri: the content as given, BOM, CRLF and no final newline included.
        uri = "orchestra://features/area/FEAT-010"
        content = BOM + "---\r\ntitle: Ten\r\n---\r\n# Ten\r\n\r\nno final newline"
        sc = ok(await client.call_tool("create", {"uri": uri, "content": content}))
        assert (sc["uri"], sc["version"]) == (uri, 1)
        assert sc["diff"].startswith(f"--- /dev/null\n+++ {uri}\n")
        await check(client, project, "features/area/FEAT-010.md", sc, content)
        refused(await client.call_tool("create", {"uri": uri, "content": "again"}), "exists")
        assert project.bytes_of("features/area/FEAT-010.md") == content.encode()

        # create under a numbered folder: the next number; under one of slugs: the title's slug.
        sc = ok(await client.call_tool("create", {"under": "features", "content": "# Three\n"}))
        assert sc["uri"] == "orchestra://features/FEAT-003"
        await check(client, project, "features/FEAT-003.md", sc, "# Three\n")
        sc = ok(await client.call_tool("create", {"under": "docs/adr", "title": "Write path, atomic!", "content": "# ADR\r\n"}))
        assert sc["uri"] == "orchestra://docs/adr/0007-write-path-atomic"
        await check(client, project, "docs/adr/0007-write-path-atomic.md", sc, "# ADR\r\n")
        sc = ok(await client.call_tool("create", {"under": "notes", "title": "Größe & naïve", "content": "x"}))
        assert sc["uri"] == "orchestra://notes/grosse-naive"
        await check(client, project, "notes/grosse-naive.md", sc, "x")

        # write: the whole text, as given.
        text, version, _ = await read(client, uri)
        assert version == 1
        new = "# Ten\n\r\nmixed\rendings\n\n"
        sc = ok(await client.call_tool("write", {"uri": uri, "content": new, "ifVersion": 1}))
        assert sc["version"] == 2
        await check(client, project, "features/area/FEAT-010.md", sc, new)

        # move: the same bytes under the new uri, the old file gone, the target's folder made.
        to = "orchestra://docs/moved/deep/ten"
        sc = ok(await client.call_tool("move", {"uri": uri, "to": to, "ifVersion": 2}))
        assert (sc["uri"], sc["movedFrom"]) == (to, uri)
        await check(client, project, "docs/moved/deep/ten.md", sc, new)
        assert not (project.root / "features/area/FEAT-010.md").exists()
        refused(await client.call_tool("edit", {"uri": uri, "edits": [{"append": "x"}]}), uri)
        # Refused onto an existing document: both stay.
        other = "orchestra://notes/bom"
        refused(await client.call_tool("move", {"uri": to, "to": other}), "exists")
        assert project.bytes_of("docs/moved/deep/ten.md") == new.encode()
        assert project.bytes_of("notes/bom.md") == BOM_DOC.encode()

        # delete: the file gone, resources/read an error, the history still readable.
        _, version, _ = await read(client, to)
        sc = ok(await client.call_tool("delete", {"uri": to, "ifVersion": version}))
        assert sc["removed"] is True and sc["uri"] == to
        assert not (project.root / "docs/moved/deep/ten.md").exists()
        with pytest.raises(MCPError):
            await client.read_resource(to)
        old = await client.read_resource(f"{uri}?version=1")
        assert old.contents[0].text.encode() == content.encode()
        old = await client.read_resource(f"{uri}?version=2")
        assert old.contents[0].text.encode() == new.encode()
        refused(await client.call_tool("delete", {"uri": to}))

    project.serve(mode, body)


def test_dry_run_writes_nothing(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        for path, uri, edits, plus in [
            ("notes/crlf.md", "orchestra://notes/crlf", [{"section": "Plan", "with": "new plan\n"}], "+new plan\r"),
            ("notes/odd.md", "orchestra://notes/odd", [{"frontmatter": {"status": "done"}}], "+status: done   # keep me"),
            ("notes/nofinal.md", "orchestra://notes/nofinal", [{"append": "more"}], "+more"),
        ]:
            before = project.bytes_of(path)
            dry = ok(await client.call_tool("edit", {"uri": uri, "edits": edits, "ifVersion": 1, "dryRun": True}))
            assert dry["dryRun"] is True and plus in dry["diff"].split("\n"), dry["diff"]
            assert "Dry run: nothing was written" in text_of(await client.call_tool(
                "edit", {"uri": uri, "edits": edits, "dryRun": True}
            ))
            await unchanged(client, project, path, uri, before, 1)
            # The edit itself then makes exactly the change the dry run showed.
            real = ok(await client.call_tool("edit", {"uri": uri, "edits": edits, "ifVersion": 1}))
            assert real["diff"] == dry["diff"] and real["version"] == 2
            assert project.bytes_of(path) != before

    project.serve(mode, body)


def test_a_stale_version_writes_nothing(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        uri, path = "orchestra://notes/bom", "notes/bom.md"
        sc = ok(await client.call_tool("edit", {"uri": uri, "edits": [{"append": "two\n"}], "ifVersion": 1}))
        assert sc["version"] == 2
        data = project.bytes_of(path)
        for name, args in [
            ("edit", {"edits": [{"append": "x"}]}),
            ("edit", {"edits": [{"append": "x"}], "dryRun": True}),
            ("write", {"content": "x"}),
            ("move", {"to": "orchestra://notes/elsewhere"}),
            ("delete", {}),
        ]:
            result = await client.call_tool(name, {"uri": uri, "ifVersion": 1, **args})
            refused(result, "changed since version 1", "now version 2")
            await unchanged(client, project, path, uri, data, 2)
        assert not (project.root / "notes/elsewhere.md").exists()

    project.serve(mode, body)


def test_an_outside_write_between_read_and_edit_is_not_lost(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        uri, path = "orchestra://notes/crlf", "notes/crlf.md"
        _, version, _ = await read(client, uri)
        assert version == 1
        # An editor saves the file; no import runs.
        outside = CRLF.replace("old plan", "their plan, longer").encode()
        (project.root / path).write_bytes(outside)
        result = await client.call_tool("edit", {"uri": uri, "edits": [{"append": "mine\n"}], "ifVersion": version})
        refused(result, "changed since version 1", "now version 2")
        await unchanged(client, project, path, uri, outside, 2)
        # Read again, redo: both changes are in the file.
        sc = ok(await client.call_tool("edit", {"uri": uri, "edits": [{"append": "mine\n"}], "ifVersion": 2}))
        assert sc["version"] == 3
        await check(
            client,
            project,
            path,
            sc,
            "---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\n"
            "## Plan\r\ntheir plan, longer\r\n## Notes\r\nnote one\r\nnote one again\r\nmine\r\n",
        )
        # The same with an outside write of the same size, its mtime put back.
        stat = os.stat(project.root / path)
        same = project.bytes_of(path).replace(b"mine", b"MINE")
        (project.root / path).write_bytes(same)
        os.utime(project.root / path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        result = await client.call_tool("write", {"uri": uri, "content": "overwrite\n", "ifVersion": 3})
        refused(result, "changed since version 3", "now version 4")
        await unchanged(client, project, path, uri, same, 4)

    project.serve(mode, body)


def test_files_made_or_removed_outside_are_never_clobbered(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        # A file saved by an editor but not imported: create and move onto it are refused.
        (project.root / "notes/theirs.md").write_bytes(b"theirs\r\n")
        refused(await client.call_tool("create", {"uri": "orchestra://notes/theirs", "content": "mine\n"}), "exists")
        result = await client.call_tool("move", {"uri": "orchestra://notes/bom", "to": "orchestra://notes/theirs", "ifVersion": 1})
        refused(result, "exists")
        assert project.bytes_of("notes/theirs.md") == b"theirs\r\n"
        await unchanged(client, project, "notes/bom.md", "orchestra://notes/bom", BOM_DOC.encode(), 1)
        # A file removed by hand: an edit of it is refused and creates nothing.
        (project.root / "notes/odd.md").unlink()
        result = await client.call_tool("edit", {"uri": "orchestra://notes/odd", "edits": [{"append": "x"}], "ifVersion": 1})
        refused(result, "orchestra://notes/odd")
        assert not (project.root / "notes/odd.md").exists()

    project.serve(mode, body)


def test_edits_apply_all_or_none(served: tuple[Project, str]) -> None:
    project, mode = served

    async def body(client: Client) -> None:
        uri, path = "orchestra://notes/crlf", "notes/crlf.md"
        data = project.bytes_of(path)
        for edits, words in [
            ([{"append": "x"}, {"replace": "nowhere", "with": "y"}], ["replace #2", "nowhere", "not found"]),
            ([{"append": "x"}, {"replace": "note one", "with": "y"}], ["replace #2", "occurs 2 times"]),
            ([{"prepend": "x"}, {"section": "No such heading", "with": "y"}], ["section #2", "Plan", "Notes"]),
            ([{"append": "x"}, {"frontmatter": {"bad key!": 1}}], ["edit #2", "bad key!"]),
            ([{"append": "x", "with": "y"}], ["edit #1", "with"]),
            ([], ["empty"]),
        ]:
            refused(await client.call_tool("edit", {"uri": uri, "edits": edits, "ifVersion": 1}), *words)
            await unchanged(client, project, path, uri, data, 1)

    project.serve(mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_declarations_and_read_only(tmp_path: Path, mode: str) -> None:
    # The declarations do not depend on the store: SQLite only.
    project = make_project(tmp_path, "sqlite", "write_decl")

    async def declared(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in WRITE_TOOLS:
            annotations = tools[name].annotations
            assert annotations is not None, name
            assert annotations.read_only_hint is False, (name, annotations)
            assert annotations.destructive_hint is (name != "create"), (name, annotations)
            assert annotations.open_world_hint is False, (name, annotations)
            assert tools[name].output_schema is not None, name
            assert "ifVersion" in tools[name].input_schema["properties"] or name == "create"

    async def read_only(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "read" in names and not names & set(WRITE_TOOLS), names
        for name, args in [
            ("edit", {"uri": "orchestra://notes/bom", "edits": [{"append": "x"}]}),
            ("create", {"uri": "orchestra://notes/new", "content": "x"}),
            ("delete", {"uri": "orchestra://notes/bom"}),
        ]:
            result = await client.call_tool(name, args)
            assert result.is_error, result

    project.serve(mode, declared)
    project.serve(mode, read_only, "--read-only")
    assert project.bytes_of("notes/bom.md") == BOM_DOC.encode()
    assert not (project.root / "notes/new.md").exists()
    assert_in_sync(project)
