"""docs/scaling.md's spark-submit recipe on a real (if small) cluster: a Spark standalone master
and one worker, separate processes on 127.0.0.1, started from the pyspark wheel's spark-class.
The driver is dpfim/__main__.py under spark-submit --master spark://...; dpfim is shipped to the
executors as a zip with --py-files (the worker runs without this test's PYTHONPATH), so the byte
ranges are read and counted in executor JVMs with their own Python workers. A seeded run must
release the local engine's JSON. One cluster for the module, about a minute in all: marked slow."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import dpfim

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed")

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "groceries_sample.csv"
SPARK_BIN = Path(pyspark.__file__).parent / "bin"
START_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon this test started, with everything it started (its process group: the
    worker's executors and their Python workers)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
    else:  # the daemon is gone; its children may not be
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _alive_workers(ui_port: int) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    try:
        with opener.open(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            state = json.load(response)
    except OSError:
        return 0
    except ValueError:  # an HTML page while the master's UI is still starting (seen under load)
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(master URL, worker directory) of a standalone master and one worker (2 cores, 1 GiB)
    on 127.0.0.1; both stopped at the end of the module, also when a test or the start fails."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("java is not installed")
    home = tmp_path_factory.mktemp("standalone")
    work = home / "work"
    work.mkdir()
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_WORKER_DIR": str(work),
        "SPARK_LOG_DIR": str(home),
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    env.pop("PYTHONPATH", None)  # executors must get dpfim from --py-files, not from here
    spark_class = str(SPARK_BIN / "spark-class")
    port, ui_port, worker_ui = _free_port(), _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    logs = {name: home / f"{name}.log" for name in ("master", "worker")}
    commands = {
        "master": [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui_port),
        ],
        "worker": [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--webui-port",
            str(worker_ui),
            "--cores",
            "2",
            "--memory",
            "1g",
            "--work-dir",
            str(work),
            master_url,
        ],
    }
    started: list[subprocess.Popen[bytes]] = []
    try:
        for name in ("master", "worker"):
            with logs[name].open("wb") as log:
                started.append(
                    subprocess.Popen(
                        commands[name],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,  # its own process group, stopped as one
                    )
                )
        deadline = time.monotonic() + START_TIMEOUT
        while _alive_workers(ui_port) < 1:
            for process, name in zip(started, ("master", "worker"), strict=True):
                if process.poll() is not None:
                    pytest.fail(f"the {name} exited ({process.returncode}): {_tail(logs[name])}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"no worker registered in {START_TIMEOUT:.0f} s: {_tail(logs['worker'])}"
                )
            time.sleep(0.5)
        yield master_url, work
    finally:
        for process in reversed(started):
            _stop(process)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This dpfim as a zip for --py-files (the docs' "ship it as a zip or wheel")."""
    package = Path(dpfim.__file__).resolve().parent
    target = tmp_path_factory.mktemp("ship") / "dpfim.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(package.rglob("*.py")):
            archive.write(path, path.relative_to(package.parent).as_posix())
    return target


@pytest.fixture(scope="module")
def fimi_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The groceries sample as a FIMI file: items numbered by first appearance, one basket a
    line, blank lines kept."""
    ids: dict[str, int] = {}
    out = io.StringIO()
    for row in csv.reader(io.StringIO(SAMPLE.read_text(encoding="utf-8"), newline="")):
        out.write(" ".join(str(ids.setdefault(item.strip(), len(ids))) for item in row) + "\n")
    path = tmp_path_factory.mktemp("fimi") / "groceries.dat"
    path.write_text(out.getvalue())
    return path


def _submit(master: str, shipped: Path, args: list[str], out_file: Path) -> dict[str, object]:
    main_py = Path(dpfim.__file__).resolve().parent / "__main__.py"
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(
        [
            str(SPARK_BIN / "spark-submit"),
            "--master",
            master,
            "--deploy-mode",
            "client",
            "--py-files",
            str(shipped),
            "--conf",
            "spark.log.level=WARN",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.sql.files.maxPartitionBytes=200000",  # several byte ranges per file
            str(main_py),
            *args,
            "--engine",
            "spark",
            "-o",
            str(out_file),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert '"schema"' not in done.stdout  # the result is in the -o file only
    result: dict[str, object] = json.loads(out_file.read_text())
    return result


def _local(args: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "dpfim", *args, "--engine", "local"],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _comparable(result: dict[str, object], engine: str) -> dict[str, object]:
    params = result["params"]
    assert isinstance(params, dict) and params.pop("engine") == engine
    result.pop("created")
    return result


@pytest.mark.slow
@pytest.mark.parametrize("data", ["basket", "fimi"])
def test_spark_submit_to_a_standalone_cluster_releases_the_local_engines_result(
    cluster: tuple[str, Path], shipped: Path, fimi_file: Path, data: str, tmp_path: Path
) -> None:
    master, work = cluster
    source = SAMPLE if data == "basket" else fimi_file
    args = ["mine", str(source), "--eps", "1", "--delta", "1e-9", "--seed", "7", "--size", "2"]
    on_cluster = _submit(master, shipped, args, tmp_path / "top.json")
    on_local = _local(args)
    assert _comparable(on_cluster, "spark") == _comparable(on_local, "local")
    assert on_cluster["private"] is False
    # the work ran in an executor the worker launched, with dpfim from the shipped zip
    assert list(work.glob("app-*/*/stderr")), "no executor ran on the worker"
    assert list(work.glob("app-*/*/dpfim.zip")), "dpfim.zip was not shipped to the executor"
