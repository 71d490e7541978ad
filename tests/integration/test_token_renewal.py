"""A registry token that the registry stops accepting mid-run is renewed: the quickstart,
built, pushed, verified and promoted through `doit` against a registry that wants a bearer
token for every request and revokes every token it issued once the run's first manifest is
in (a rotated signing key, a revoked robot account), long before their `expires_in`.

The registry is tests/support/oci_registry.py's, in this process, on loopback (plain HTTP),
with `token_auth` on: its `/token` realm grants any scope asked, to anyone (the run is
anonymous, so no credentials are involved and any refusal can only be of a token), and
answers a request whose token was revoked with 401 `invalid_token`. A hook revokes the
tokens right after the first manifest PUT the registry stored (the builder's), so the rest
of the run (four tiers' blobs and manifests, every SBOM and verify report, every `latest`)
meets its cached tokens refused. Verify runs the image the engine built (the summary's
"pulled: none"), so the Docker daemon asks this registry nothing here; it could (it pushes
to and pulls from it with tokens), and its token requests, which carry a User-Agent, are
not counted as ours.

What is counted is the registry's own record of its realm: each token request, its scopes,
and who asked (our client's http.client sends no User-Agent). Without a revocation the run
asks once per scope (one `Tokens` per process, registry/auth.py): the requests before the
revocation are that run, and so is a scope first needed after it. So per scope at most one
request before the revocation and at most one after it, at most one more than the run
needs without revocation; and the scopes asked twice are exactly those of the requests
that met a revoked token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest

from build_graph.registry.auth import token_scope
from tests.support.oci_registry import DIGEST, Handler, OciRegistry, Reply, Seen, running_registry
from tests.support.registry import Registry
from tests.support.workspace import built, make_workspace, pushed, ran

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")
MANIFEST_PATH = r"/v2/.+/manifests/[^/]+"
ROUTE = re.compile(
    r"/v2/(.+?)/(?:manifests/[^/]+|blobs/uploads/[^/]*|blobs/[^/]+|tags/list|referrers/[^/]+)"
)


@dataclass(frozen=True)
class Asked:
    """One request to the realm: who asked, for which scopes, and whether it came after
    the revocation."""

    user_agent: str
    scopes: tuple[str, ...]
    after_revocation: bool


@dataclass
class Realm:
    """The realm's record, and the revocation's moment (an index into the registry's
    `requests`), set once by the hook."""

    asked: list[Asked] = field(default_factory=list)
    revoked_at: int | None = None

    def ours(self) -> list[Asked]:
        """Our client's token requests: http.client sends no User-Agent; dockerd does."""
        return [a for a in self.asked if not a.user_agent]


class RecordingHandler(Handler):
    """The test registry's handler, keeping who asked its realm for what."""

    realm: ClassVar[Realm]

    def _token(self, query: dict[str, list[str]]) -> Reply:
        # Under the registry's lock (Handler._serve): ordered with the hook's revocation.
        self.realm.asked.append(
            Asked(
                self.headers.get("User-Agent", ""),
                tuple(query.get("scope", [])),
                self.realm.revoked_at is not None,
            )
        )
        return super()._token(query)


@contextmanager
def token_registry() -> Iterator[tuple[OciRegistry, Realm]]:
    """The in-process registry, wanting tokens, serving on 127.0.0.1 until the block ends;
    its tokens are revoked once, right after the first manifest PUT it stored."""
    registry = OciRegistry(token_auth=True)
    realm = Realm()

    def revoke_after_the_first_manifest(method: str, path: str) -> None:
        if method != "PUT" or "/manifests/" not in path or realm.revoked_at is not None:
            return
        with registry.lock:
            stored = [s for s in registry.seen("PUT", MANIFEST_PATH) if s.status == 201]
            if stored and realm.revoked_at is None:
                registry.revoke_tokens()
                realm.revoked_at = len(registry.requests)

    registry.hook = revoke_after_the_first_manifest

    class Bound(RecordingHandler):
        pass

    Bound.realm = realm
    with running_registry(registry, Bound):
        yield registry, realm


def per_scope(asked: list[Asked]) -> dict[tuple[str, ...], int]:
    counts: dict[tuple[str, ...], int] = {}
    for one in asked:
        counts[one.scopes] = counts.get(one.scopes, 0) + 1
    return counts


def test_tokens_revoked_after_the_first_push_are_renewed_and_every_tier_is_promoted(
    tmp_path: Path,
) -> None:
    with token_registry() as (registry, realm):
        # make_workspace wants the stack's registry address: a stand-in that is never
        # started (the registry is the in-process one, read below from its own stores).
        ws = make_workspace(tmp_path, Registry(tmp_path / "unused", registry.port))
        run = ws.doit()
        said = run.stdout + run.stderr
        assert run.returncode == 0, said[-4000:]
        for stage in ("build", "push", "verify", "promote"):
            assert sorted(ran(run, stage)) == sorted(TIERS), (stage, run.summary)
        assert sorted(built(run)) == sorted(pushed(run)) == sorted(TIERS)

        # Every tier's `latest` names the manifest one of its hash tags names.
        for tier in TIERS:
            repo = f"quickstart/{tier}"
            tags = registry.tags_of(repo)
            hashes = [t for t in tags if len(t) == 20 and t != "latest"]
            assert "latest" in tags and hashes, (tier, tags)
            latest = registry.resolve(repo, "latest")
            assert latest is not None and DIGEST.fullmatch(latest), (tier, latest)
            assert latest in {registry.resolve(repo, h) for h in hashes}, (tier, tags)

        # The revocation came right after the first manifest and before the rest of the
        # run: later manifests (other tiers', reports, `latest`) were stored after it, and
        # the run met its cached tokens refused (401 to a revoked bearer token).
        assert realm.revoked_at is not None, "no manifest was ever stored"
        with registry.lock:
            before = registry.requests[: realm.revoked_at]
            after = registry.requests[realm.revoked_at :]
            revoked = set(registry.revoked)
        stored_before = [s for s in before if s.method == "PUT" and "/manifests/" in s.path]
        assert [s.status for s in stored_before].count(201) == 1, stored_before
        assert stored_before[-1].path.startswith("/v2/quickstart/builder/manifests/")
        later = [s for s in after if s.method == "PUT" and "/manifests/" in s.path]
        assert [s.path for s in later if s.status == 201], "nothing was pushed after it"
        for tier in TIERS[1:]:  # every tier but the first pushed its manifest after it
            assert any(
                s.status == 201 and s.path.startswith(f"/v2/quickstart/{tier}/manifests/")
                for s in later
            ), tier
        met = [
            s
            for s in after
            if s.status == 401 and s.authorization.removeprefix("Bearer ") in revoked
        ]
        assert met, "no request carried a revoked token: the renewal was never exercised"

        # Token requests per scope, from the realm's own record. Without a revocation the
        # run needs one per scope (one `Tokens` per process, shared by its threads): the
        # requests before the revocation are that run, and so are those of a scope first
        # needed after it. With it, one more at the most: exactly the scopes whose token
        # was refused, asked once again.
        ours = realm.ours()
        print("our token requests by scope:", per_scope(ours))
        print("the daemon's:", per_scope([a for a in realm.asked if a.user_agent]))
        first = per_scope([a for a in ours if not a.after_revocation])
        second = per_scope([a for a in ours if a.after_revocation])
        assert first and all(n == 1 for n in first.values()), first
        assert second and all(n == 1 for n in second.values()), second
        total = per_scope(ours)
        needed = dict.fromkeys(total, 1)  # the run without a revocation
        assert all(total[scope] <= needed[scope] + 1 for scope in total), total
        renewed = {scope for scope, n in total.items() if n == 2}
        assert renewed == {scope_of(s) for s in met}, (renewed, met)

        # No line says credentials or a token were refused.
        for line in said.splitlines():
            assert "refused the credentials" not in line, line
            assert "token service refused" not in line, line
            assert "docker login" not in line, line
            assert "HTTP 401" not in line, line


def scope_of(seen: Seen) -> tuple[str, ...]:
    """The token scopes a request to the registry needs, as our client asks for them."""
    found = ROUTE.fullmatch(seen.path.partition("?")[0])
    assert found is not None, seen
    action = {"GET": "pull", "HEAD": "pull", "DELETE": "delete"}.get(seen.method, "pull,push")
    path = seen.path if seen.method == "POST" else ""  # a mount's `from=` is in its query
    return tuple(token_scope(found[1], action, path).split())
