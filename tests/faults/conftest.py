import pytest

from .helpers import make_partition_file


@pytest.fixture(scope="session")
def partition_file(tmp_path_factory):
    return make_partition_file(tmp_path_factory.mktemp("part") / "iid.npz")
