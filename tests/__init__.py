"""specconsole's test suite (a package so fixtures import as ``tests.fixtures.*``)."""
