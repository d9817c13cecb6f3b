"""Runs the CLI in-process, as the tests of the command line do (tests import this)."""

from __future__ import annotations

from click.testing import CliRunner

from dpfim.cli import main


def run(args: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """`dpfim ARGS` with `stdin` as standard input: (exit code, stdout, stderr)."""
    with CliRunner().isolation(input=stdin) as (out, err, *_):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, out.getvalue().decode(), err.getvalue().decode()
