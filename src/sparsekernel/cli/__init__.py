"""The ``sparsekernel`` command: fit a model from a data file, save it, predict, compare models,
list the built-in data sets, and run the demo tables.

    sparsekernel compare breast_cancer
    sparsekernel fit sklr train.csv -o model.skm --C 10
    sparsekernel predict model.skm test.csv --proba -o proba.csv
    sparsekernel info model.skm

Any failure (a bad file, a missing label column, a non-numeric cell, a model file of another
format version, an unknown model, regression data given to a classifier) is one short line on
stderr and a non-zero exit status: 1 for errors, 2 for command-line usage, 130 when interrupted.
Set SPARSEKERNEL_DEBUG=1 for the traceback. Output cut short by its reader (``| head``) ends
quietly with status 141.
"""

from __future__ import annotations

import os
import sys
import warnings

import click
from rich.table import Table

from .._version import __version__
from ..datasets import list_datasets
from ._common import MODELS, one_line, out, own_message
from .compare import compare
from .demo import demo as _demo  # the name sparsekernel.cli.demo stays the module
from .model import fit, info, predict

__all__ = ["app", "main"]

_EPILOG = """\b
Examples:
  sparsekernel compare breast_cancer
  sparsekernel compare diabetes        (regression data: svr against scikit-learn's SVR)
  sparsekernel compare train.csv --test test.csv --models svc,sklr --plot frontier.png
  sparsekernel fit sklr train.csv -o model.skm --C 10 --gamma 0.1
  sparsekernel fit ocsvm train.csv --nu 0.05 -o detector.skm
  sparsekernel predict model.skm test.csv --proba -o proba.csv
  sparsekernel info model.skm

\b
Models:
""" + "\n".join(f"  {name:<7} {text}" for name, (_, text) in MODELS.items()) + """

Data: a CSV file (--label-column, default the last column), an svmlight/libsvm file (.gz too),
an .npz file with arrays X and y, or a built-in name (sparsekernel datasets). fit and compare
standardise the features inside the model (--no-scale keeps them as given); regression data goes
to svr or nusvr (a classifier refuses it); ocsvm fits on the rows alone (outlier detection: predict
gives 1 for an inlier, -1 for an outlier)."""


def _version():
    return __version__


class _StdoutClosed(Exception):
    """stdout's reader went away (EPIPE); not an OSError, so that click does not end the process
    itself with status 1."""


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise _StdoutClosed from e


@click.group(cls=_Group, invoke_without_command=True, epilog=_EPILOG,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=_version(), prog_name="sparsekernel")
@click.pass_context
def app(ctx):
    """Fast kernel machines from the command line: fit, save, predict and compare."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@app.command()
def datasets():
    """List the built-in data sets (no download)."""
    table = Table(title="built-in data sets (name:N picks another size of the synthetic ones)")
    for column in ("name", "task", "samples", "features", "classes", "description"):
        table.add_column(column, justify="right" if column in ("samples", "features", "classes") else "left")
    for d in list_datasets():
        table.add_row(d["name"], d["task"], str(d["n_samples"]), str(d["n_features"]),
                      "-" if d["n_classes"] is None else str(d["n_classes"]), d["description"])
    out.print(table)


app.add_command(_demo)
app.add_command(fit)
app.add_command(predict)
app.add_command(info)
app.add_command(compare)


def _message(exc):
    if isinstance(exc, click.UsageError):
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return exc.format_message() + hint
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    if isinstance(exc, (ValueError, OSError, TypeError, MemoryError)):
        return str(exc) or type(exc).__name__
    return f"internal error ({type(exc).__name__}: {exc})"


def _error_line(exc):
    """The message of ``exc`` as one line: sparsekernel's own whole (its lists of valid choices, the
    reason of a parse error; cut only after 1000 characters), another library's with its data
    literals elided, at most 300 characters."""
    if own_message(exc):
        return one_line(_message(exc), limit=1000, elide=False)
    return one_line(_message(exc))


def _print_warnings(caught):
    seen = set()
    for w in caught:
        text = one_line(f"{w.category.__name__}: {w.message}", limit=1000)
        if text not in seen:
            seen.add(text)
            click.echo(f"sparsekernel: warning: {text}", err=True)


def quiet_broken_pipe(run):
    """Call ``run()`` and return its exit status; when the reader of stdout goes away (``... | head``)
    end quietly with status 141 (a process killed by SIGPIPE, as the shell reports it): no traceback,
    and stdout pointed at /dev/null so that the interpreter's last flush does not complain."""
    try:
        status = run()
        sys.stdout.flush()
        return status
    except (BrokenPipeError, _StdoutClosed):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor behind sys.stdout (captured)
            pass
        return 141


def demo_main(argv=None):
    """sparsekernel-demo: ``sparsekernel demo`` (its errors one line on stderr, ending quietly with
    status 141 when the reader of the output goes away)."""
    return main(["demo", *(sys.argv[1:] if argv is None else argv)])


def main(argv=None):
    """Run the command line (``argv`` defaults to ``sys.argv[1:]``) and return the exit status."""
    return quiet_broken_pipe(lambda: _main(argv))


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = bool(os.environ.get("SPARSEKERNEL_DEBUG"))
    with warnings.catch_warnings(record=True) as caught:
        try:
            status = app.main(args=argv, prog_name="sparsekernel", standalone_mode=False)
        except (BrokenPipeError, _StdoutClosed):
            raise
        except KeyboardInterrupt:
            click.echo("sparsekernel: interrupted", err=True)
            return 130
        except click.exceptions.Abort:
            click.echo("sparsekernel: aborted", err=True)
            return 130
        except Exception as exc:  # one line, never a traceback (unless asked for)
            if debug:
                raise
            click.echo(f"sparsekernel: error: {_error_line(exc)}", err=True)
            return exc.exit_code if isinstance(exc, click.ClickException) else 1
    _print_warnings(caught)
    return status if isinstance(status, int) else 0
