"""Ember's operator conformance suite: one sample database, run on any installed device.

    pip install 'ember[conformance]'            # pytest and the torch==2.13.0 oracle
    pytest --pyargs ember.testing --ember-device=NAME

On a real device every op's values, dtypes and shapes, gradients (and gradcheck in
float64), error classes and messages, and random-number statistics are compared with
torch on cpu; with --ember-device=meta, shapes, dtypes and strides are compared with
torch's meta device. `op_db` is the sample database, `tolerances` the one list of
tolerances, `plugin` the pytest option and fixture; the `test_*` modules are the checks.
See docs/architecture.md, "Conformance suite".

`import ember` never imports this package; importing its modules imports torch and pytest.
"""

# The test modules, in the order they run (the repository's tests/test_conformance.py
# collects the same functions from them).
TEST_MODULES = ("test_database", "test_outputs", "test_gradients", "test_op_errors", "test_random", "test_nn_functional",
                "test_threads", "test_fuzz")
