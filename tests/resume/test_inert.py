"""A fixture is booted from its own files only: never through a link, never a sparse member
(issue 17). The other 27 hostile member kinds are in test_untrusted.py."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import CheckpointError
from pytest_agentevals.resume.fixture import Fixture

from ..conftest import run_agentevals
from ..resume_support import make_fixture, rewrite

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("name", ["workspace.tar", "workspace.index.json"])
def test_a_fixture_file_that_is_a_link_is_refused(tmp_path: Path, name: str) -> None:
    fixture = make_fixture(tmp_path / "tree")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / name
    target.write_bytes((fixture / name).read_bytes())  # a good file: only the link is wrong
    (fixture / name).unlink()
    (fixture / name).symlink_to(target)
    boot = tmp_path / "boot"
    boot.mkdir()
    with pytest.raises(CheckpointError, match=f"{name} is a symbolic link") as raised:
        Fixture.open(fixture).restore(boot / "workspace")
    assert "replace" in str(raised.value)
    assert os.listdir(boot) == []


def test_a_pax_sparse_member_is_refused(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path / "tree")
    # A regular member whose PAX headers (format 1.0) declare a map: 1 byte of data, 1 GiB claimed.
    info = tarfile.TarInfo("big.bin")
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": "big.bin",
        "GNU.sparse.realsize": str(1 << 30),
    }
    data = b"1\n0\n1\n".ljust(512, b"\0") + b"x"
    info.size = len(data)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(data))
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue())) as check:
        assert check.getmembers()[0].issparse()  # the crafted member is what it claims
    entry = {"path": "big.bin", "type": "file", "mode": "0644", "size": 1 << 30, "sha256": "0" * 64}
    index = json.dumps({"format": 1, "entries": [entry]}).encode()
    rewrite(fixture, "workspace.tar", buffer.getvalue())
    rewrite(fixture, "workspace.index.json", index)
    boot = tmp_path / "boot"
    boot.mkdir()
    with pytest.raises(CheckpointError, match="is a sparse file"):
        Fixture.open(fixture).restore(boot / "workspace")
    assert os.listdir(boot) == []


@pytest.mark.parametrize("claimed", [1 << 30, 4096])
def test_a_member_with_only_a_pax_realsize_header_is_refused_by_restore_and_verify(
    tmp_path: Path, claimed: int
) -> None:
    # No sparse map tarfile recognizes (not `issparse()`), only `GNU.sparse.realsize`, which sets the
    # member's size: a few bytes claiming a gigabyte, or claiming exactly what they are.
    fixture = make_fixture(tmp_path / "tree")
    data = b"x" * 4096
    info = tarfile.TarInfo("big.bin")
    info.pax_headers = {"GNU.sparse.realsize": str(claimed)}
    info.size = len(data)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(data))
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue())) as check:
        (member,) = check.getmembers()
        assert not member.issparse()
        assert member.size == claimed
    raw = buffer.getvalue()
    read = raw[member.offset_data : member.offset_data + claimed]
    entry = {
        "path": "big.bin",
        "type": "file",
        "mode": "0644",
        "size": claimed,
        "sha256": hashlib.sha256(read).hexdigest(),
    }
    rewrite(fixture, "workspace.tar", raw)
    rewrite(fixture, "workspace.index.json", json.dumps({"format": 1, "entries": [entry]}).encode())
    boot = tmp_path / "boot"
    boot.mkdir()
    with pytest.raises(CheckpointError, match=r"'big\.bin' is a sparse file"):
        Fixture.open(fixture).restore(boot / "workspace")
    assert os.listdir(boot) == []
    with pytest.raises(CheckpointError, match=r"'big\.bin' is a sparse file"):
        Fixture.open(fixture).archive().check()  # what `agentevals resume verify` runs


def test_a_member_claiming_more_bytes_than_the_archive_holds_is_refused(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path / "tree")
    info = tarfile.TarInfo("big.bin")
    info.pax_headers = {"size": str(1 << 30)}  # a PAX size: what a real file over 8 GiB is given
    info.size = 4096
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(b"x" * 4096))
    entry = {"path": "big.bin", "type": "file", "mode": "0644", "size": 1 << 30, "sha256": "0" * 64}
    rewrite(fixture, "workspace.tar", buffer.getvalue())
    rewrite(fixture, "workspace.index.json", json.dumps({"format": 1, "entries": [entry]}).encode())
    with pytest.raises(CheckpointError, match=r"claims 1073741824 bytes, past the end of workspace\.tar"):
        Fixture.open(fixture).archive().check()


def test_a_resumed_leg_makes_no_folder_through_a_linked_parent(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A committed `.agentevals` that links outside the tree: the leg's trace folder is refused
    before it is made, naming the link, and nothing appears at the link's target."""
    from .. import resume_support as agent
    from .test_pytest import CONFTEST

    outside = tmp_path_factory.mktemp("outside")
    pytester.makepyfile(resume_support=Path(agent.__file__).read_text())
    pytester.makeconftest(CONFTEST)
    agent.make_fixture(pytester.path)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --agentevals-history=off\n")
    (pytester.path / ".agentevals").symlink_to(outside, target_is_directory=True)
    pytester.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*LinkRefused: */.agentevals: is a symbolic link (to *"])
    assert list(outside.iterdir()) == []  # not even `traces/`


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("workspace", [], "'workspace' is missing, or its files and bytes are not counts"),
        ("lineage.total_tokens", "many", "lineage.total_tokens is 'many', not a number >= 0"),
        ("lineage.cost_usd", "cheap", "lineage.cost_usd is 'cheap', not a number >= 0"),
        ("history", [5], "history[0] is not a JSON object"),
        ("seed", "s", "'seed' is not a whole number"),
        ("checkpoint", [], "'checkpoint' is not a string"),
    ],
)
def test_a_wrong_typed_manifest_value_is_one_error_in_list_and_show(
    tmp_path: Path, key: str, value: Any, said: str
) -> None:
    fixture = make_fixture(tmp_path / "tree")
    manifest = json.loads((fixture / "manifest.json").read_text())
    holder, _, name = key.rpartition(".")
    (manifest[holder] if holder else manifest)[name] = value
    (fixture / "manifest.json").write_text(json.dumps(manifest))
    listed = run_agentevals("resume", "list", cwd=tmp_path / "tree")
    shown = run_agentevals("resume", "show", "counter-2", cwd=tmp_path / "tree")
    assert "Traceback" not in listed.stderr + shown.stderr
    assert said in listed.stdout, listed.stdout + listed.stderr
    assert shown.returncode == 2
    assert said in shown.stderr
