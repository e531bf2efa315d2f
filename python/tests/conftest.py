"""Runs on every rank of a job: each rank collects the same tests in the
same order, so the collectives inside a test are collective. Started with
no launcher, the tests run as rank 0 of 1.

tests/slurm/test_python.sh launches this directory under mpirun and srun
and counts a test as passed only when it passed on every rank. By hand:

    env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
        /usr/bin/python3 -m pytest -p no:cacheprovider python/tests

with RINGPOINT_LIBRARY and PYTHONPATH pointing at a build tree, or the
package installed.
"""
import os

# Before init() reads it: a test that leaves a peer behind fails in 30 s
# instead of the default 5 minutes (the runner's time limit is the last
# resort).
os.environ.setdefault("RINGPOINT_COLL_TIMEOUT", "30s")

import pytest  # noqa: E402

import ringpoint.torch as hvd  # noqa: E402

hvd.init()


def pytest_report_header(config):
    import ringpoint
    return "ringpoint %s from %s, rank %d of %d" % (
        ringpoint.library_version(), os.path.dirname(ringpoint.__file__),
        hvd.rank(), hvd.size())


def pytest_collection_modifyitems(config, items):
    # Every rank must run the same tests in the same order; a plugin that
    # shuffles them (pytest-randomly) would pair different collectives.
    items.sort(key=lambda item: item.nodeid)


# Each outcome as it happens, one line each ("pass|fail|skip NODEID"), when
# the runner asks for it: a rank killed for hanging writes no JUnit file,
# yet the tests it finished still count.
_progress = os.environ.get("RP_PYTEST_PROGRESS")


def pytest_runtest_logreport(report):
    if not _progress:
        return
    if report.failed:
        outcome = "fail"
    elif report.skipped:
        outcome = "skip"
    elif report.when == "call":
        outcome = "pass"
    else:
        return
    with open(_progress, "a") as f:
        f.write("%s %s\n" % (outcome, report.nodeid))


@pytest.fixture(autouse=True)
def _same_test_on_every_rank(request):
    """Before each test, check that every rank is at the same test (a rank
    that failed half-way through a test's collectives would otherwise pair
    the rest with another test's)."""
    from ringpoint import _coll
    _coll.verify(_coll.ctx_for("test"), "test", ("test", request.node.nodeid))
    yield
