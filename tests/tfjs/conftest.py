import pytest
from tfjsmodels import make_models


@pytest.fixture(scope="session")
def tfjs_models(tmp_path_factory):
    """The folder of TF.js' models (one subfolder per case)."""
    return make_models(tmp_path_factory.mktemp("tfjs"))
