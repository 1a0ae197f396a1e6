"""Many nodes, one command: logphase run on every node of a cluster through the engine it already has
(ssh, Slurm, Ray, Kubernetes), and each node's answer, or why it gave none."""
