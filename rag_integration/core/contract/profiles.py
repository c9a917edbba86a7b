"""Named profiles: presets of a backend's options with the latency budget they are meant to keep.

A backend declares ``PROFILES``; option ``profile`` selects one (``default`` when none is named). A profile's
options are defaults under the request's own, so a request can still override any of them. The budget is what
``rag-integration certify`` holds each profile to; at run time only ``deadline_ms`` limits a request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rag_integration.core.options import OptionSpec

DEFAULT_PROFILE = "default"
DEFAULT_BUDGET_MS = 5_000
"""The budget of a backend that declares no profiles: one certify fixture request against a built index (certify's
warm run; its cold run, which builds the index, is reported beside it) in five seconds."""
PROFILE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")

PROFILE: OptionSpec[str] = OptionSpec(
    "profile",
    "string",
    "a preset of the backend's options with a latency budget (`rag-integration backends` lists them); "
    "the request's own options override it",
    default=DEFAULT_PROFILE,
)


@dataclass(frozen=True)
class Profile:
    """Option presets and the time one request with them should take, in milliseconds."""

    options: Mapping[str, Any] = field(default_factory=dict)
    budget_ms: int = DEFAULT_BUDGET_MS
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def as_dict(self) -> dict[str, object]:
        return {"options": dict(self.options), "budget_ms": self.budget_ms, "description": self.description}


IMPLICIT_PROFILES: Mapping[str, Profile] = MappingProxyType({DEFAULT_PROFILE: Profile()})
"""What a backend that declares no profiles has: ``default``, no presets, the default budget."""


def profile_problems(profiles: object, declared_options: frozenset[str], fixed: frozenset[str]) -> list[str]:
    """What is wrong with a ``PROFILES`` declaration; ``fixed`` are keys a preset may not set (the selector)."""
    if not isinstance(profiles, Mapping):
        return [f"PROFILES must be a mapping of names to Profile, got {type(profiles).__name__}"]
    if not profiles:
        return []
    problems = []
    if DEFAULT_PROFILE not in profiles:
        problems.append(f"PROFILES must include {DEFAULT_PROFILE!r}, which answers when no profile is named")
    for name, profile in profiles.items():
        if not isinstance(name, str) or not PROFILE_NAME.fullmatch(name):
            problems.append(f"profile name {name!r} is not lower-case letters, digits, '_' or '-' (at most 40)")
            continue
        if not isinstance(profile, Profile):
            problems.append(f"profile {name!r} is a {type(profile).__name__}, not a Profile")
            continue
        budget = profile.budget_ms
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            problems.append(f"profile {name!r} has budget_ms {budget!r}: expected an int >= 1")
        for key in profile.options:
            if key in fixed or key == PROFILE.key:
                problems.append(f"profile {name!r} presets {key!r}, which a profile cannot choose")
            elif key not in declared_options:
                problems.append(f"profile {name!r} presets {key!r}, which the backend does not declare")
    return problems
