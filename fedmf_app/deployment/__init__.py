"""Running a real federation: a SuperLink and SuperNodes on this machine (owned by PID), TLS
certificates and SuperNode keys, and the one-command local federation
(``python -m fedmf_app.deployment.federation``)."""
