"""S3 input through dpfim's own pyarrow.fs reader, against a local S3-compatible server (moto in
server mode on 127.0.0.1; no network beyond loopback). The pyspark wheel has no Hadoop S3
connector: the driver lists s3:// itself (byte_ranges.remote_files) and every Python worker opens
its byte ranges through pyarrow.fs at the endpoint AWS_ENDPOINT_URL names. The records, and so a
seeded result, must be those of the local engine on the part files concatenated in name order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dpfim
from dpfim.engines import byte_ranges

moto_server = pytest.importorskip(
    "moto.server", reason="moto is not installed (pip install '.[test]')"
)
pafs = pytest.importorskip("pyarrow.fs")

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "groceries_sample.csv"
BUCKET = "dpfim-test"
PARTS = 3
# three tied top pairs, one a part file: which one a seeded run names depends on the item ids,
# i.e. on the order in which the parts are read (ids by first appearance)
TIES = [b"a,b\n" * 2000, b"c,d\n" * 2000, b"e,f\n" * 2000]
TIE_SEEDS = range(6)


def _parts(data: bytes, k: int) -> list[bytes]:
    """`data` cut into k pieces at line ends."""
    lines = data.splitlines(keepends=True)
    step = -(-len(lines) // k)
    return [b"".join(lines[i : i + step]) for i in range(0, len(lines), step)]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto S3 server on a free loopback port, holding groceries in 3 part files (with a
    `_SUCCESS` marker and a hidden `.crc` file, skipped as Spark skips them) and the tie data."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        store = pafs.S3FileSystem(
            endpoint_override=url,
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        store.create_dir(BUCKET)
        objects = {
            f"groceries/part-{k:05d}": p for k, p in enumerate(_parts(SAMPLE.read_bytes(), PARTS))
        }
        objects.update({f"ties/part-{k:05d}": p for k, p in enumerate(TIES)})
        objects.update({"groceries/_SUCCESS": b"", "groceries/.part-00000.crc": b"x,y\n"})
        for key in sorted(objects, reverse=True):  # not in name order
            with store.open_output_stream(f"{BUCKET}/{key}") as out:
                out.write(objects[key])
        yield url
    finally:
        server.stop()


def _aws_env(url: str, tmp: Path) -> dict[str, str]:
    """The AWS chain pointed at the test server only (dummy keys; no ~/.aws, no EC2 metadata)."""
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-credentials"),
    }


def test_the_driver_lists_s3_part_files_in_name_order(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in _aws_env(endpoint, tmp_path).items():
        monkeypatch.setenv(key, value)
    parts = [f"s3://{BUCKET}/groceries/part-{k:05d}" for k in range(PARTS)]
    assert byte_ranges.remote_files(f"s3://{BUCKET}/groceries/") == parts
    assert byte_ranges.remote_files(f"s3://{BUCKET}/groceries") == parts
    assert byte_ranges.remote_files(f"s3://{BUCKET}/groceries/part-*") == parts
    assert byte_ranges.remote_files(f"s3a://{BUCKET}/groceries/part-0000[02]") == [
        f"s3a://{BUCKET}/groceries/part-00000",
        f"s3a://{BUCKET}/groceries/part-00002",
    ]
    assert byte_ranges.remote_files(parts[1]) == [parts[1]]
    assert byte_ranges.remote_files(f"s3://{BUCKET}/") is None  # subdirectories: Spark lists
    with pytest.raises(FileNotFoundError):
        byte_ranges.remote_files(f"s3://{BUCKET}/nothing-here/")
    with pytest.raises(FileNotFoundError):
        byte_ranges.remote_files(f"s3://{BUCKET}/groceries/part-9*")
    expected = _parts(SAMPLE.read_bytes(), PARTS)
    assert byte_ranges.sizes(parts) == [len(p) for p in expected]
    with byte_ranges.open_uri(parts[2]) as f:
        assert f.read() == expected[2]


# Runs in one Python (one SparkSession, one JVM) with the AWS variables set, so that the local[2]
# workers, started by that JVM, inherit them as executors get spark.executorEnv.* on a cluster.
_ON_SPARK = """
import json, sys
import dpfim
jobs = json.loads(sys.argv[1])
conf = {
    "spark.dpfim.reader": "python",  # fail instead of falling back to Spark's (S3-less) reader
    "spark.sql.files.maxPartitionBytes": "150000",  # several byte ranges per part file
}
out = [
    dpfim.mine_file(**job, engine="spark", spark_master="local[2]", spark_conf=conf)
    for job in jobs
]
print(json.dumps(out))
"""


def _comparable(result: dict[str, Any], engine: str) -> dict[str, Any]:
    assert result["params"].pop("engine") == engine
    result.pop("created")
    return result


@pytest.mark.slow
def test_mining_s3_part_files_on_spark_equals_the_local_engine_on_their_concatenation(
    endpoint: str, tmp_path: Path
) -> None:
    common = {"eps": "1", "delta": "1e-9"}
    groceries = [
        {"source": f"s3://{BUCKET}/groceries/part-*", "fmt": "basket", "seed": 3, "size": 2},
        {"source": f"s3a://{BUCKET}/groceries/", "fmt": "basket", "seed": 5, "size": 3},
    ]
    ties = [{"source": f"s3://{BUCKET}/ties", "fmt": "basket", "seed": s} for s in TIE_SEEDS]
    jobs = [{**job, **common} for job in groceries + ties]
    env = {**os.environ, **_aws_env(endpoint, tmp_path)}
    root = str(Path(dpfim.__file__).resolve().parents[1])  # this dpfim, in the workers too
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _ON_SPARK, json.dumps(jobs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    on_spark = json.loads(done.stdout)

    whole = tmp_path / "groceries.csv"
    whole.write_bytes(b"".join(_parts(SAMPLE.read_bytes(), PARTS)))
    assert whole.read_bytes() == SAMPLE.read_bytes()
    tied = tmp_path / "ties.csv"
    tied.write_bytes(b"".join(TIES))
    locally = [{**job, "source": str(whole)} for job in jobs[: len(groceries)]]
    locally += [{**job, "source": str(tied)} for job in jobs[len(groceries) :]]
    on_local = [dpfim.mine_file(**job) for job in locally]

    assert [_comparable(r, "spark") for r in on_spark] == [
        _comparable(r, "local") for r in on_local
    ]
    picks = [tuple(r["itemset"] or ()) for r in on_local[len(groceries) :]]
    # the seeds name different tied pairs, so a different part order would change the result
    assert len(set(picks)) > 1, picks
    assert set(picks) <= {("a", "b"), ("c", "d"), ("e", "f")}
