"""Prefect flows of the corecode pipeline (deployments in prefect.yaml)."""
