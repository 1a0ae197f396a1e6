"""The Kubernetes transport: the pods of a label selector (`kubectl get pods -o json`), `kubectl exec` into each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from logphase.errors import SnapshotError
from logphase.nodes.transport import MAX_ANSWER_BYTES, NodeRun, last_words, remote_failure, run_each, run_local

_KUBECTL_REASONS = (
    ("forbidden", "auth"),
    ("unauthorized", "auth"),
    ("notfound", "no such pod"),
    ("not found", "no such pod"),
    ("container not found", "no such container"),
    ("unable to upgrade connection", "exec refused"),
    ("connection refused", "unreachable"),
    ("i/o timeout", "timeout"),
)


@dataclass(frozen=True)
class KubernetesTransport:
    """`kubectl exec POD [-n NS] [-c CONTAINER] -- COMMAND` in each running pod that `selector` picks."""

    selector: str
    namespace: str | None = None
    container: str | None = None
    kubectl: str = "kubectl"
    engine: str = "k8s"

    def _scope(self) -> list[str]:
        return ["-n", self.namespace] if self.namespace else []

    def pods(self, *, timeout_s: float) -> list[str]:
        """The running pods of the selector, by name, in kubectl's order."""
        argv = [self.kubectl, "get", "pods", "-l", self.selector, *self._scope(), "-o", "json"]
        listed = run_local("kubectl", argv, timeout_s=timeout_s)
        where = f"pods -l {self.selector}" + (f" -n {self.namespace}" if self.namespace else "")
        if listed.failure is not None or listed.returncode != 0:
            said = listed.failure or last_words(listed.stderr) or f"exit status {listed.returncode}"
            raise SnapshotError(
                f"kubectl could not list the {where}: {said}",
                hint="check `kubectl get pods -l SELECTOR -n NAMESPACE` and your kubeconfig's context",
            )
        try:
            names = running_pods(json.loads(listed.stdout.decode("utf-8", "replace")))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise SnapshotError(
                f"kubectl get pods printed no pod list ({type(exc).__name__})", hint="is `kubectl` the real one?"
            ) from None
        if not names:
            raise SnapshotError(f"no running pod matches {where}", hint="check it with `kubectl get pods -l …`")
        return names

    def argv(self, pod: str, command: Sequence[str]) -> list[str]:
        container = ["-c", self.container] if self.container else []
        return [self.kubectl, "exec", pod, *self._scope(), *container, "--", *command]

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float,
        parallel: int,
        limit: int = MAX_ANSWER_BYTES,
        cut: bool = False,
    ) -> list[NodeRun]:
        pods = self.pods(timeout_s=timeout_s)
        runs = run_each(
            [(p, self.argv(p, command)) for p in pods], timeout_s=timeout_s, parallel=parallel, limit=limit, cut=cut
        )
        return [explain(run) for run in runs]


def running_pods(document: Any) -> list[str]:
    """Names of the Running pods of a `kubectl get pods -o json` list (a pod still Pending has no processes)."""
    names = []
    for item in document["items"]:
        phase = (item.get("status") or {}).get("phase")
        if phase in (None, "Running"):
            names.append(str(item["metadata"]["name"]))
    return names


def explain(run: NodeRun) -> NodeRun:
    """Name what kept a pod from answering: the remote logphase's words first, then kubectl's."""
    if run.failure is not None or run.returncode in (0, None) or run.stdout.strip():
        return run
    said = remote_failure(run.stderr, run.returncode)
    if said is None:
        words = last_words(run.stderr)
        lowered = run.stderr.lower()
        kind = next((kind for needle, kind in _KUBECTL_REASONS if needle in lowered), "kubectl exec failed")
        said = f"{kind}: {words}" if words else kind
    return replace(run, failure=said)
