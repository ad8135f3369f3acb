# Shared fixtures of the tune_engine tests: ctest sets PYTHONPATH to the
# module's build folder and TUNE_DATA_DIR to the vendored data.
import os
import pathlib

import pytest


@pytest.fixture(scope="session")
def data_dir():
    return pathlib.Path(os.environ.get("TUNE_DATA_DIR", pathlib.Path(__file__).parents[3] / "data"))


@pytest.fixture
def small_space():
    import tune_engine

    return tune_engine.Space({"x": [1, 2, 4, 8], "y": ["a", "b"]}, constraints=["x > 1"])
