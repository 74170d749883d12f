"""Share-nothing workers: a stage runs in its worker's own checkout and exchanges data only through the DVC remote
and the MLflow server (``corecode.deploy.worker``). The services themselves: ``deploy/services.sh``; docs/deploy.md."""
