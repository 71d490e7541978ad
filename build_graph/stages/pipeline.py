"""The pipeline, declared once: one row per stage, in the order a tier goes through them.

A row says what the stage needs (stages of the same image, of its parent or of its
builder), when it is done (a check that `doit info` prints as a sentence), what it does,
whether it acts on one platform image or on a tier's platform group, whether promote must
see it passed (a gate), and the columns it fills in the run summary. run/tasks.py turns the
rows into doit tasks; `doit list`, `doit info`, the run summary and promote read them; no
other module declares or wires a stage (run/tasks.py keeps the six names a dodo.py of the
release before this table asked for, frozen). Adding a stage is a row here and a module in stages/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from build_graph.oci.digest import Digest
from build_graph.plan.plan import PlannedTier
from build_graph.stages import build, preflight, promote, push, verify
from build_graph.stages import compile as compile_stage
from build_graph.stages import render as render_stage
from build_graph.stages.work import Facts, Work


@dataclass(frozen=True)
class Need:
    """An edge: `stage` of this image (self), of its parent tier, or of its builder. A
    per-tier stage's 'self' is every image of its group."""

    stage: str
    of: Literal["self", "parent", "builder"] = "self"


@dataclass(frozen=True)
class Outcome:
    """What happened to one stage of one tier in a run, for its summary columns."""

    ran: bool = False
    up_to_date: bool = False
    failed: str | None = None  # the first line of its error
    not_run: bool = False  # a stage it needs failed


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[Mapping[str, str], Outcome], str]  # the tier's facts, this stage's outcome


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str  # `doit list`'s line for the stage
    act: Callable[[Work], Facts | None]
    needs: tuple[Need, ...] = ()
    per: Literal["image", "tier"] = "image"
    applies: Callable[[PlannedTier], bool] = lambda tier: True
    # The up-to-date check and the sentence `doit info` prints for it. None: doit's own,
    # from `targets` and `config` (files written here, their text's digest).
    done: Callable[[Work], bool] | None = None
    says: Callable[[Work], str] = lambda work: ""
    found: Callable[[Work], Facts] | None = None  # what `done` read, for the summary
    targets: Callable[[Work], list[str]] | None = None
    config: Callable[[Work], str] | None = None
    # A gate: promote moves no tag until this stage passed for every image of the group
    # (run first, there, for a digest nobody ran it for). `passed(work, digest, fresh)`
    # says what it found (facts; a "note" is shown), None when it has not passed.
    passed: Callable[[Work, Digest, bool], Facts | None] | None = None
    after_gates: bool = False  # needs every gate of every image of its group (promote)
    columns: tuple[Column, ...] = ()
    quiet: bool = False  # doit's verbosity 1: its output only on failure

    def key(self, image: PlannedTier) -> str:
        """What follows '<stage>:' in the task's name: the image's key, or its tier's for a
        stage of the whole platform group."""
        return image.group_key if self.per == "tier" else image.key

    def task(self, image: PlannedTier) -> str:
        """The doit task of this stage for `image` (or for its group)."""
        return f"{self.name}:{self.key(image)}"


def _fact(name: str) -> Callable[[Mapping[str, str], Outcome], str]:
    return lambda facts, outcome: facts.get(name, "-")


def _verify_cell(facts: Mapping[str, str], outcome: Outcome) -> str:
    if outcome.failed is not None:
        return f"failed: {outcome.failed}"
    gpu = facts.get("gpu", "")
    if gpu.startswith(("passed", "not applicable")):
        gpu = gpu.split(":", 1)[0]  # the why matters only when it was not checked
    gpu = f"; GPU {gpu}" if gpu else ""
    if "verify" in facts:
        return f"{facts['verify']}{gpu}"
    if outcome.up_to_date:
        return f"passed (a report in the registry){gpu}"
    return "not run" if outcome.not_run else "-"


def _compile(work: Work) -> Facts:
    assert work.builder is not None  # applies: tiers with a compile section
    preflight.before_long_work(work)
    return compile_stage.compile_tier(work.stack, work.tier, work.builder)


def _build(work: Work) -> Facts | None:
    preflight.before_long_work(work)
    return build.build(work.stack, work.tier, work.holdings)


def _compile_says(work: Work) -> str:
    tier = work.tier
    return (
        f"{tier.image} exists, or {tier.folder.wheels} holds wheels of compile inputs "
        f"{tier.compile_hash}"
    )


def _pushed_digest(work: Work) -> Facts:
    """The digest the registry named for the hash tag in this run's round."""
    digest = work.holdings.answer(work.tier.image).digest
    return {"digest": str(digest)} if digest else {}


def _promote_says(work: Work) -> str:
    tags = ", ".join(work.tier.human_tags) or "none"
    if work.tier.platform is None:
        return f"every human tag ({tags}) names the verified digest in the registry"
    platforms = ", ".join(str(i.platform) for i in work.images)
    return f"every human tag ({tags}) names the index of the verified images of {platforms}"


STAGES: tuple[Stage, ...] = (
    Stage(
        "render",
        "write each tier's Dockerfile (and compile script) under build/",
        act=lambda w: render_stage.render(w.tier),
        targets=lambda w: [str(p) for p in render_stage.rendered_files(w.tier)],
        config=lambda w: render_stage.rendered_digest(w.tier),
        quiet=True,
    ),
    Stage(
        "compile",
        "run a tier's compile script in its builder image with a compiler cache",
        act=_compile,
        needs=(Need("render"), Need("build", of="builder")),
        applies=lambda tier: tier.builder_key is not None,
        done=lambda w: compile_stage.compiled(w.tier, w.holdings),
        says=_compile_says,
        columns=(
            Column("compiler cache", _fact("ccache")),
            Column("compile time", _fact("compile_time")),
        ),
    ),
    Stage(
        "build",
        "docker build a tier, tagged <registry>/<tier>:<content hash>",
        act=_build,
        needs=(Need("render"), Need("build", of="parent"), Need("compile")),
        done=lambda w: build.image_available(w.tier, w.holdings),
        says=lambda w: f"the registry holds {w.tier.image}, or the daemon here has it",
        columns=(Column("built", _fact("built")),),
    ),
    Stage(
        "push",
        "push a tier's hash tag to the registry",
        act=lambda w: push.push(w.tier, w.holdings),
        needs=(Need("build"),),
        done=lambda w: push.pushed(w.tier, w.holdings),
        says=lambda w: f"the registry holds {w.tier.image}",
        found=_pushed_digest,
        columns=(Column("pushed", _fact("pushed")),),
    ),
    Stage(
        "verify",
        "probe the pushed image and check it against images.toml",
        act=lambda w: verify.verify(w.tier, w.holdings),
        needs=(Need("push"),),
        done=lambda w: verify.verified(w.tier, w.holdings),
        says=lambda w: (
            f"the registry holds a passing verify report for {w.tier.image}'s digest "
            "and these checks"
        ),
        passed=lambda w, digest, fresh: verify.passed(w.tier, digest, w.holdings, fresh),
        columns=(Column("pulled", _fact("pulled")), Column("verify", _verify_cell)),
    ),
    Stage(
        "promote",
        "move the human tags and 'latest' to the verified digest",
        act=lambda w: promote.promote(w, gates()),
        needs=(Need("promote", of="parent"),),
        per="tier",
        after_gates=True,
        done=lambda w: promote.promoted(w, gates()),
        says=_promote_says,
        columns=(Column("digest", _fact("digest")), Column("tags moved", _fact("tags_moved"))),
    ),
)


def stages() -> tuple[Stage, ...]:
    """The table in force (a test may add a row: run/tasks.py and the readers take it from
    here, never from a copy)."""
    return STAGES


def by_name() -> dict[str, Stage]:
    return {stage.name: stage for stage in stages()}


def gates() -> list[promote.Gate]:
    """The stages promote must see passed, for each image, in pipeline order."""
    return [
        promote.Gate(stage.name, stage.act, stage.passed, stage.applies)
        for stage in stages()
        if stage.passed is not None
    ]


def final() -> str:
    """The stage `doit` runs by default: the last, which takes a tier to its human tags."""
    return stages()[-1].name
