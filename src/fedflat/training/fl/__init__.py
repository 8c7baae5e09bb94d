"""The federated simulation engine."""
