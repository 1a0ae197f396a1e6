"""The options that reach a cluster's nodes through its engine (ssh, Slurm, Ray, Kubernetes), and the transport they
name: shared by `stacks` and `analyze`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from logphase.errors import UsageError

if TYPE_CHECKING:  # a plain `analyze` of files here imports none of the engines
    from logphase.nodes.transport import Transport

F = TypeVar("F", bound=Callable[..., object])


def node_options(what: str, *, timeout_default: str = "60") -> Callable[[F], F]:
    """--hosts/--hostfile/--ssh-config, --slurm, --ray, --k8s -l -n --container, --node-timeout, --parallel;
    `what` is what --hosts takes from each host, `timeout_default` the default --node-timeout, in words."""
    options = [
        click.option(
            "--hosts", metavar="H1,H2,…", help=f"Many nodes through ssh (BatchMode, your ssh config): {what}."
        ),
        click.option("--hostfile", metavar="FILE", help="Many nodes through ssh: the hosts of FILE, one a line."),
        click.option("--ssh-config", metavar="FILE", help="With --hosts/--hostfile: this ssh config file (ssh -F)."),
        click.option("--slurm", "slurm_job", metavar="JOBID", help="Many nodes through Slurm: the nodes of this job."),
        click.option(
            "--ray",
            "ray_address",
            is_flag=False,
            flag_value="auto",
            metavar="[ADDRESS]",
            help="Many nodes through Ray: each alive node of the cluster (default: this machine's).",
        ),
        click.option("--k8s", "k8s", is_flag=True, help="Many nodes through Kubernetes: each pod of -l."),
        click.option("-l", "--selector", metavar="SELECTOR", help="With --k8s: the pods' label selector (app=sglang)."),
        click.option("-n", "--namespace", metavar="NS", help="With --k8s: the pods' namespace."),
        click.option("--container", metavar="NAME", help="With --k8s: the pods' container."),
        click.option(
            "--node-timeout",
            "node_timeout_s",
            type=click.FloatRange(1, 3600),
            metavar="SECONDS",
            help=f"With many nodes: seconds a node may take to answer [default: {timeout_default}].",
        ),
        click.option(
            "--parallel",
            type=click.IntRange(1, 1024),
            default=32,
            show_default=True,
            help="With many nodes: nodes reached at once (ssh, kubectl, Ray).",
        ),
    ]

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def pick_transport(
    hosts: str | None,
    hostfile: str | None,
    ssh_config: str | None,
    slurm_job: str | None,
    ray_address: str | None,
    k8s: bool,
    selector: str | None,
    namespace: str | None,
    container: str | None,
) -> Transport | None:
    """The engine the options name (at most one), or None for this machine alone."""
    named = (("--hosts", hosts or hostfile), ("--slurm", slurm_job), ("--ray", ray_address), ("--k8s", k8s))
    engines = [name for name, given in named if given]
    if len(engines) > 1:
        raise UsageError(f"{' and '.join(engines)} name two ways to the nodes", hint="give one of them")
    if not k8s and (selector or namespace or container):
        raise UsageError("-l, -n and --container go with --k8s", hint="--k8s -l app=sglang -n NS")
    if ssh_config and not (hosts or hostfile):
        raise UsageError("--ssh-config goes with --hosts or --hostfile", hint="--hosts h1,h2 --ssh-config FILE")
    if hosts or hostfile:
        from logphase.nodes.ssh import SshTransport, hosts_from

        return SshTransport(hosts=tuple(hosts_from(hosts, hostfile)), config=ssh_config)
    if slurm_job:
        if not slurm_job.replace("_", "").isdigit():
            raise UsageError(f"{slurm_job!r} is not a Slurm job id", hint="the number `squeue --me` shows")
        from logphase.nodes.slurm import SlurmTransport

        return SlurmTransport(job=slurm_job)
    if ray_address:
        from logphase.nodes.ray_cluster import RayTransport

        return RayTransport(address=ray_address)
    if k8s:
        if not selector:
            raise UsageError("--k8s needs the pods' label selector", hint="--k8s -l app=sglang")
        from logphase.nodes.k8s import KubernetesTransport

        return KubernetesTransport(selector=selector, namespace=namespace, container=container)
    return None
