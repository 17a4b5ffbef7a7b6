"""Sharing data through DVC remotes, end to end: a teammate's fresh clone pulls what was pushed
(local-directory remote and an S3-compatible moto server) and then has nothing to rebuild; a
missing or corrupt object in the remote fails the pull loudly instead of checking out bad data."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import Project

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

# The cheapest slice of the pipeline that still has DVC-cached outputs and a Git-kept metric.
TARGETS = ("perturb@gsm8k",)
OUTPUT = "data/perturbed/gsm8k.parquet"


def _built(project: Project) -> Project:
    """Run the targets, commit the lock file and push the outputs to the default remote."""
    project.dvc("repro", *TARGETS)
    project.commit("run the pipeline slice")
    project.dvc("push", "--with-deps", *TARGETS)
    return project


def _clone(project: Project, name: str = "clone") -> Project:
    """A teammate's fresh checkout: git clone beside the original (so the default local remote,
    <parent>/evalpipe-remote, is the same directory) with no DVC cache and no data."""
    dest = project.root.parent / name
    project.run("git", "clone", "-q", str(project.root), str(dest))
    return type(project)(dest)


def _object_md5(project: Project, path: str) -> str:
    """The md5 that dvc.lock records for the output ``path``."""
    lock = yaml.safe_load((project.root / "dvc.lock").read_text())
    for stage in lock["stages"].values():
        for out in stage.get("outs", []):
            if out["path"] == path:
                return out["md5"]
    raise AssertionError(f"{path} not in dvc.lock")


def _assert_nothing_to_do(clone: Project) -> None:
    status = clone.dvc("status", "--with-deps", *TARGETS)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout
    repro = clone.dvc("repro", *TARGETS)
    assert "Running stage" not in repro.stdout, repro.stdout
    assert "didn't change, skipping" in repro.stdout


def test_fresh_clone_pulls_from_local_remote_and_has_nothing_to_rebuild(project: Project) -> None:
    _built(project)
    remote = project.root.parent / "evalpipe-remote"
    assert any(p.is_file() for p in (remote / "files" / "md5").rglob("*")), "nothing was pushed"

    clone = _clone(project)
    assert not (clone.root / OUTPUT).exists()
    clone.dvc("pull", "--with-deps", *TARGETS)

    assert (clone.root / OUTPUT).read_bytes() == (project.root / OUTPUT).read_bytes()
    _assert_nothing_to_do(clone)


def test_missing_remote_object_fails_the_pull_and_names_it(project: Project) -> None:
    _built(project)
    md5 = _object_md5(project, OUTPUT)
    obj = project.root.parent / "evalpipe-remote" / "files" / "md5" / md5[:2] / md5[2:]
    obj.unlink()

    clone = _clone(project)
    pull = clone.dvc("pull", "--with-deps", *TARGETS, check=False)

    assert pull.returncode != 0
    assert md5 in pull.stderr, pull.stderr
    assert OUTPUT in pull.stderr, pull.stderr
    assert not (clone.root / OUTPUT).exists()


def test_corrupt_remote_object_is_never_checked_out(project: Project) -> None:
    _built(project)
    md5 = _object_md5(project, OUTPUT)
    obj = project.root.parent / "evalpipe-remote" / "files" / "md5" / md5[:2] / md5[2:]
    # Bit rot that keeps the read-only mode DVC gave the object, so only re-hashing can tell.
    good = obj.read_bytes()
    os.chmod(obj, stat.S_IWUSR | stat.S_IRUSR)
    obj.write_bytes(good[:-16] + b"\x00" * 16)
    os.chmod(obj, 0o444)

    clone = _clone(project)
    pull = clone.dvc("pull", "--with-deps", *TARGETS, check=False)

    assert pull.returncode != 0
    assert "Checkout failed" in pull.stderr and OUTPUT in pull.stderr, pull.stderr
    assert not (clone.root / OUTPUT).exists(), "corrupt data was checked out"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible HTTP server (moto) on 127.0.0.1, with one empty bucket."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        boto3.client(
            "s3",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="team-key",
            aws_secret_access_key="team-secret",
        ).create_bucket(Bucket="evalpipe-team")
        yield url
    finally:
        server.stop()


def _use_s3(project: Project, endpoint: str, *, define: bool) -> None:
    """Point ``project`` at the S3 remote; credentials go to the uncommitted config.local."""
    if define:
        project.dvc("remote", "add", "-d", "s3remote", "s3://evalpipe-team/store")
        project.dvc("remote", "modify", "s3remote", "endpointurl", endpoint)
        project.dvc("remote", "modify", "s3remote", "region", "us-east-1")
        project.dvc("remote", "modify", "s3remote", "verify", "true")
    project.dvc("remote", "modify", "--local", "s3remote", "access_key_id", "team-key")
    project.dvc("remote", "modify", "--local", "s3remote", "secret_access_key", "team-secret")


def test_fresh_clone_pulls_through_s3_and_credentials_stay_uncommitted(
    project: Project, s3_endpoint: str
) -> None:
    import boto3

    _use_s3(project, s3_endpoint, define=True)
    project.dvc("repro", *TARGETS)
    project.commit("s3 remote and pipeline slice")
    project.dvc("push", "--with-deps", *TARGETS)

    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="team-key",
        aws_secret_access_key="team-secret",
    )
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="evalpipe-team")["Contents"]]
    md5 = _object_md5(project, OUTPUT)
    assert f"store/files/md5/{md5[:2]}/{md5[2:]}" in keys
    assert ".dvc/config.local" not in project.git("ls-files").stdout
    assert "team-secret" not in (project.root / ".dvc" / "config").read_text()

    clone = _clone(project)
    _use_s3(clone, s3_endpoint, define=False)
    clone.dvc("pull", "--with-deps", *TARGETS)
    assert (clone.root / OUTPUT).read_bytes() == (project.root / OUTPUT).read_bytes()
    _assert_nothing_to_do(clone)

    # The same object corrupted in the bucket: a second teammate's pull must refuse it.
    s3.put_object(
        Bucket="evalpipe-team",
        Key=f"store/files/md5/{md5[:2]}/{md5[2:]}",
        Body=b"not the parquet file",
    )
    other = _clone(project, "clone2")
    _use_s3(other, s3_endpoint, define=False)
    pull = other.dvc("pull", "--with-deps", *TARGETS, check=False)
    assert pull.returncode != 0
    assert OUTPUT in pull.stderr, pull.stderr
    assert not (other.root / OUTPUT).exists(), "corrupt data was checked out"
