"""Example agents built on pytest-agentevals; importable from the repository root (`examples.taskrunner`)."""
