"""What the integration tests are made of, one module a part: loopback servers, the
registry and the GCS emulator they serve, engines beside the main one, and workspaces
(copies of a stack) with the records of their runs. Fixtures live in conftest.py; the
parts live here, so a test imports what it uses from its owner."""
