"""A checkpoint fixture is untrusted data (it arrives in pull requests): every hostile or damaged one is
refused with one clear error naming the fixture and the file or member, and a refused restore leaves
nothing behind — each promise tested with a crafted fixture."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest

from pytest_agentevals.errors import CheckpointError
from pytest_agentevals.resume.fixture import Fixture
from pytest_agentevals.resume.restore import MAX_BYTES, MAX_DEPTH, MAX_ENTRIES
from pytest_agentevals.resume.store import open_fixture

from ..conftest import run_agentevals
from ..resume_support import Member, craft_archive, edit_manifest, make_fixture, rewrite


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    return make_fixture(tmp_path)


def assert_nothing_restored(parent: Path) -> None:
    """No workspace, and no scratch folder of a restore, in the folder a restore was aimed at."""
    assert sorted(p.name for p in parent.iterdir()) == []


def restore_refused(fixture_dir: Path, tmp_path: Path, match: str) -> CheckpointError:
    target = tmp_path / "boot"
    target.mkdir()
    with pytest.raises(CheckpointError, match=match) as raised:
        Fixture.open(fixture_dir).restore(target / "workspace")
    assert_nothing_restored(target)
    assert str(fixture_dir) in str(raised.value)  # names the fixture
    return raised.value


def test_a_crafted_but_benign_archive_restores(fixture_dir: Path, tmp_path: Path) -> None:
    craft_archive(fixture_dir, [Member("a.txt", b"a"), Member("sub", type=tarfile.DIRTYPE, mode=0o755)])
    workspace = Fixture.open(fixture_dir).restore(tmp_path / "workspace")
    assert (workspace / "a.txt").read_bytes() == b"a"
    assert (workspace / "sub").is_dir()


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        (
            Member(
                "/etc/cron.d/x",
                b"* * * * * root sh",
                index={"path": "x", "type": "file", "mode": "0644", "size": 17, "sha256": "0" * 64},
            ),
            "is absolute",
        ),
        (
            Member(
                "../escape.txt",
                b"x",
                index={"path": "escape.txt", "type": "file", "mode": "0644", "size": 1, "sha256": "0" * 64},
            ),
            r"climbs out of the workspace",
        ),
        (
            Member(
                "link",
                type=tarfile.SYMTYPE,
                linkname="../../..",
                index={"path": "link", "type": "link", "target": "inside"},
            ),
            "is refused by tarfile's data filter|differs from its index entry",
        ),
        (
            Member(
                "hard",
                type=tarfile.LNKTYPE,
                linkname="/etc/passwd",
                index={"path": "hard", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64},
            ),
            "is a hard link",
        ),
        (
            Member(
                "dev",
                type=tarfile.CHRTYPE,
                index={"path": "dev", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64},
            ),
            "is a character device",
        ),
        (
            Member(
                "blk",
                type=tarfile.BLKTYPE,
                index={"path": "blk", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64},
            ),
            "is a block device",
        ),
        (
            Member(
                "pipe",
                type=tarfile.FIFOTYPE,
                index={"path": "pipe", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64},
            ),
            "is a fifo",
        ),
        (
            Member(
                "run.sh",
                b"#!/bin/sh\n",
                mode=0o4755,
                index={"path": "run.sh", "type": "file", "mode": "0755", "size": 10, "sha256": "0" * 64},
            ),
            "has the setuid bit set",
        ),
        (
            Member(
                "bin", type=tarfile.DIRTYPE, mode=0o2775, index={"path": "bin", "type": "dir", "mode": "0775"}
            ),
            "has the setgid bit set",
        ),
    ],
    ids=[
        "absolute",
        "dotdot",
        "escaping-link",
        "hard-link",
        "char-device",
        "block-device",
        "fifo",
        "setuid",
        "setgid",
    ],
)
def test_a_hostile_member_is_refused_before_anything_is_written(
    fixture_dir: Path, tmp_path: Path, member: Member, problem: str
) -> None:
    # The index is benign: only the member checks stand between the archive and the disk.
    craft_archive(fixture_dir, [Member("ok.txt", b"fine"), member])
    error = restore_refused(fixture_dir, tmp_path, problem)
    assert repr(member.name) in str(error)  # names the member
    assert "nothing was written" in str(error)


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        (Member("/abs.txt", b"x"), "is absolute"),
        (Member("a/../../b.txt", b"x"), "climbs out"),
        (Member("up", type=tarfile.SYMTYPE, linkname="../outside"), "outside the workspace"),
        (Member("abs-link", type=tarfile.SYMTYPE, linkname="/etc/passwd"), "an absolute target"),
        (Member("setuid", b"x", mode=0o4755), "has the setuid bit set"),
        (Member("setgid", b"x", mode=0o2755), "has the setgid bit set"),
    ],
    ids=["absolute", "dotdot", "escaping-link", "absolute-link", "setuid", "setgid"],
)
def test_a_hostile_index_entry_is_refused_before_the_archive_is_read(
    fixture_dir: Path, tmp_path: Path, member: Member, problem: str
) -> None:
    craft_archive(fixture_dir, [member])
    error = restore_refused(fixture_dir, tmp_path, problem)
    assert repr(member.name) in str(error)


def test_links_that_leave_only_through_each_other_are_refused(fixture_dir: Path, tmp_path: Path) -> None:
    members = [
        Member("a", type=tarfile.DIRTYPE, mode=0o755),
        Member("a/l1", type=tarfile.SYMTYPE, linkname=".."),
        Member("l2", type=tarfile.SYMTYPE, linkname="a/l1/.."),
    ]
    craft_archive(fixture_dir, members)
    restore_refused(fixture_dir, tmp_path, "'l2' is a link to 'a/l1/..', which leaves the workspace")


def test_a_file_written_through_a_link_is_refused(fixture_dir: Path, tmp_path: Path) -> None:
    craft_archive(fixture_dir, [Member("l", type=tarfile.SYMTYPE, linkname="sub"), Member("l/x.txt", b"x")])
    restore_refused(fixture_dir, tmp_path, "lies below 'l', which is a link")


def test_more_members_than_the_cap_are_refused(fixture_dir: Path, tmp_path: Path) -> None:
    entries = [
        {"path": f"f{n}", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64}
        for n in range(MAX_ENTRIES + 1)
    ]
    craft_archive(fixture_dir, [Member("f0")], entries)
    restore_refused(fixture_dir, tmp_path, f"lists {MAX_ENTRIES + 1} entries, over the cap of 100,000")


def test_more_bytes_than_the_cap_are_refused(fixture_dir: Path, tmp_path: Path) -> None:
    # A header may claim any size: the index's claim is refused before the archive is opened.
    entries = [
        {"path": "huge.bin", "type": "file", "mode": "0644", "size": MAX_BYTES + 1, "sha256": "0" * 64}
    ]
    craft_archive(fixture_dir, [Member("huge.bin", b"small")], entries)
    restore_refused(fixture_dir, tmp_path, "holds more than 4,294,967,296 bytes")


def test_a_member_the_index_does_not_list_is_refused(fixture_dir: Path, tmp_path: Path) -> None:
    members = [Member("a.txt", b"a"), Member("stowaway.txt", b"b")]
    craft_archive(fixture_dir, members, [members[0].entry()])
    restore_refused(fixture_dir, tmp_path, "'stowaway.txt' is in workspace.tar but not in its index")


def test_tampered_content_is_refused_and_the_partial_restore_removed(
    fixture_dir: Path, tmp_path: Path
) -> None:
    # The first files are fine and get written; the last one's content does not match its SHA-256.
    good = [Member(f"f{n}.txt", b"fine") for n in range(5)]
    bad = Member("z.txt", b"evil", index={**Member("z.txt", b"good").entry()})
    craft_archive(fixture_dir, [*good, bad])
    restore_refused(fixture_dir, tmp_path, "'z.txt' was tampered with: its SHA-256 is not the one")


def test_a_changed_file_is_refused_naming_it(fixture_dir: Path, tmp_path: Path) -> None:
    (fixture_dir / "state.json").write_text('{"done": 5}')  # without vouching for it in the manifest
    fixture = Fixture.open(fixture_dir)
    with pytest.raises(CheckpointError, match=r"state.json was changed after extraction: its SHA-256"):
        fixture.state()
    archive = fixture_dir / "workspace.tar"
    archive.write_bytes(archive.read_bytes().replace(b"task 1 done", b"task 1 DONE"))
    restore_refused(fixture_dir, tmp_path, "'done/task1.txt' was tampered with")
    result = run_agentevals("resume", "verify", "--fixtures-dir", fixture_dir.parent, cwd=tmp_path)
    assert result.returncode == 1
    assert "workspace.tar was changed after extraction" in result.stdout
    assert "state.json was changed after extraction" in result.stdout


def test_a_missing_manifest_says_the_fixture_is_not_whole(fixture_dir: Path) -> None:
    (fixture_dir / "manifest.json").unlink()
    with pytest.raises(CheckpointError, match=r"has no manifest.json: it is not a whole fixture") as raised:
        Fixture.open(fixture_dir)
    assert "agentevals resume extract" in str(raised.value)


def test_a_newer_format_says_upgrade(fixture_dir: Path) -> None:
    edit_manifest(fixture_dir, lambda manifest: manifest.update(format=2))
    with pytest.raises(
        CheckpointError, match="fixture format 2, written by a newer pytest-agentevals"
    ) as raised:
        Fixture.open(fixture_dir)
    assert "pip install -U pytest-agentevals" in str(raised.value)


def test_a_state_that_is_not_json_is_named(fixture_dir: Path) -> None:
    rewrite(fixture_dir, "state.json", b"\x80\x04\x95 a pickle, not JSON")
    with pytest.raises(CheckpointError, match=r"counter-2: state.json is not JSON"):
        Fixture.open(fixture_dir).state()
    rewrite(fixture_dir, "state.json", b"[1, 2]")
    with pytest.raises(CheckpointError, match=r"state.json is not a JSON object"):
        Fixture.open(fixture_dir).state()


def test_a_manifest_naming_another_file_is_refused(fixture_dir: Path) -> None:
    edit_manifest(
        fixture_dir, lambda m: m["files"].update({"../../.ssh/id_ed25519": {"sha256": "0" * 64, "size": 1}})
    )
    with pytest.raises(CheckpointError, match=r"lists '../../.ssh/id_ed25519', which is not a fixture file"):
        Fixture.open(fixture_dir)


def test_an_unknown_name_lists_the_fixtures_that_exist(tmp_path: Path) -> None:
    make_fixture(tmp_path, "counter-a")
    make_fixture(tmp_path, "counter-b")
    with pytest.raises(CheckpointError, match=r"no such checkpoint fixture in .*counter-a, counter-b"):
        open_fixture("counter-c", tmp_path / "fixtures")


def test_an_archive_that_is_compressed_or_junk_is_refused(fixture_dir: Path, tmp_path: Path) -> None:
    rewrite(fixture_dir, "workspace.tar", b"\x1f\x8b\x08\x00" + os.urandom(64))  # gzip magic: no bombs
    restore_refused(fixture_dir, tmp_path, "workspace.tar is not an uncompressed tar archive")


def test_verify_names_the_member_and_exits_1(fixture_dir: Path, tmp_path: Path) -> None:
    craft_archive(
        fixture_dir,
        [
            Member(
                "pipe",
                type=tarfile.FIFOTYPE,
                index={"path": "pipe", "type": "file", "mode": "0644", "size": 0, "sha256": "0" * 64},
            )
        ],
    )
    result = run_agentevals("resume", "verify", "--fixtures-dir", fixture_dir.parent, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAILED" in result.stdout
    assert "workspace entry 'pipe' is a fifo" in result.stdout
    assert (
        json.loads(
            run_agentevals(
                "resume", "verify", "--json", "--fixtures-dir", fixture_dir.parent, cwd=tmp_path
            ).stdout
        )["ok"]
        is False
    )


# -- bounded: deep JSON, long link targets (issue 17) ----------------------------------------------


@pytest.mark.parametrize(
    ("linkname", "problem"),
    [
        ("a/" * 20_000 + "x", r"'l' has its link target 40,001 bytes long, over the system's limit of 4096"),
        ("x" * 300, r"'l' has its link target with a 300-byte name, over the system's limit of 255"),
    ],
)
def test_a_link_target_past_the_os_limits_is_refused_at_verify(
    fixture_dir: Path, tmp_path: Path, linkname: str, problem: str
) -> None:
    # 20,000 components once took seconds per link (every prefix joined) and passed; restore then
    # crashed making the link. Now verify refuses it as the file system would.
    craft_archive(
        fixture_dir,
        [Member("a", type=tarfile.DIRTYPE, mode=0o755), Member("l", type=tarfile.SYMTYPE, linkname=linkname)],
    )
    restore_refused(fixture_dir, tmp_path, problem)
    result = run_agentevals("resume", "verify", str(fixture_dir), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_links_through_a_long_chain_of_folders_still_resolve(fixture_dir: Path, tmp_path: Path) -> None:
    deep = "/".join(["d"] * (MAX_DEPTH - 1))  # walked once per component, not once per prefix
    members = [
        Member(deep, type=tarfile.DIRTYPE, mode=0o755),
        Member(deep + "/up", type=tarfile.SYMTYPE, linkname="../" * (MAX_DEPTH - 2) + "d"),
    ]
    craft_archive(fixture_dir, members)
    Fixture.open(fixture_dir).restore(tmp_path / "workspace")
    assert (tmp_path / "workspace" / deep / "up").is_symlink()


def test_a_folder_deeper_than_a_restore_takes_is_refused(fixture_dir: Path, tmp_path: Path) -> None:
    # 1,000 levels restored fine, then crashed pytest's own tmp_path cleanup in a later session
    # (shutil.rmtree recursing once per level on Python 3.11).
    deep = "/".join(["d"] * 1000)
    craft_archive(fixture_dir, [Member(deep, type=tarfile.DIRTYPE, mode=0o755)])
    restore_refused(fixture_dir, tmp_path, r"lies 1,000 levels deep, deeper than the 256 a restore takes")
    assert not (tmp_path / "workspace").exists()


@pytest.mark.parametrize("name", ["manifest.json", "state.json", "workspace.index.json"])
@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"[" * 1000 + b"]" * 1000, "not valid JSON here: nested deeper than 128 levels"),
        (b'{"a": ' + b"1" * 5000 + b"}", "not valid JSON here: a number of thousands of digits"),
    ],
)
def test_a_fixture_file_nested_deep_or_with_a_huge_number_is_named(
    fixture_dir: Path, tmp_path: Path, name: str, data: bytes, problem: str
) -> None:
    if name == "manifest.json":
        (fixture_dir / name).write_bytes(data)
    else:
        rewrite(fixture_dir, name, data)

    def use() -> None:
        fixture = Fixture.open(fixture_dir)
        fixture.state()
        fixture.restore(tmp_path / "workspace")

    with pytest.raises(CheckpointError) as raised:
        use()
    assert f"counter-2: {name} is not JSON (line 1: {problem}" in str(raised.value)
    result = run_agentevals("resume", "verify", str(fixture_dir), cwd=tmp_path)
    assert "Traceback" not in result.stdout + result.stderr
