"""The push stage's row: the hash tag into the registry; the digest the registry holds
recorded.

Done when the registry holds the hash tag (asked every run: push.json is only a note of
what this machine last saw, for `doit info` and the next run's first round of questions).
The push itself is stages/push_act.py's, imported when a push runs.
"""

from __future__ import annotations

from build_graph.fs import write_record
from build_graph.oci.refs import Presence
from build_graph.plan.push_record import record
from build_graph.stages.stage import Column, Deferred, Need, Stage, fact
from build_graph.stages.work import Facts, Work


def pushed(work: Work) -> bool:
    """Up to date: the registry holds the hash tag; RegistryError when it could not say."""
    tier = work.tier
    probe = work.holdings.answer(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        write_record(tier.folder.push_record, record(tier, probe.digest))
        return True
    return False


def _says(work: Work) -> str:
    return f"the registry holds {work.tier.image}"


def pushed_digest(work: Work) -> Facts:
    """The digest the registry named for the hash tag in this run's round."""
    digest = work.holdings.answer(work.tier.image).digest
    return {"digest": str(digest)} if digest else {}


STAGE = Stage(
    "push",
    "push a tier's hash tag to the registry",
    act=Deferred("build_graph.stages.push_act:push"),
    needs=(Need("build"),),
    done=pushed,
    says=_says,
    found=pushed_digest,
    columns=(Column("pushed", fact("pushed")),),
)
