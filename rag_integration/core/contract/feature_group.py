"""The FeatureGroup shape every family shares: one feature name, one selector option, one backend per class."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from mloda.provider import ComputeFramework, FeatureGroup, FeatureSet, escalate_match_abort
from mloda.user import DataAccessCollection, Feature, FeatureName, Options

from rag_integration.core.contract.declarations import check_request_options, check_selector, check_unique_selection
from rag_integration.core.contract.distributions import distribution_of
from rag_integration.core.contract.frames import FrameworkAdapter, adapter_for, framework_classes
from rag_integration.core.contract.profiles import IMPLICIT_PROFILES, PROFILE, Profile, profile_problems
from rag_integration.core.contract.request_options import EXPLAIN, RETURN_METADATA
from rag_integration.core.contract.schema import Shape, passages_shape
from rag_integration.core.contract.sources import Source
from rag_integration.core.deadline import DEADLINE_MS, Deadline, check_deadline, deadline_scope
from rag_integration.core.documents.corpus import Corpus
from rag_integration.core.documents.visibility import PRINCIPALS, UNLABELLED
from rag_integration.core.errors import (
    ConnectorError,
    ContractVersionError,
    InvalidOptionError,
    UnknownProfileError,
    short_repr,
)
from rag_integration.core.extras import modules_installed
from rag_integration.core.options import NoSettings, OptionReader, option_keys, option_specs, read_options
from rag_integration.core.progress import SHOW_PROGRESS, showing_progress, step

if TYPE_CHECKING:
    from rag_integration.core.contract.frames import ReadableFrame

CONTRACT_FORM = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})")
SELECTOR_VALUE = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""What a backend's selector value may be: a lower-case ASCII identifier, so no two read alike but for case,
script or invisible characters."""


class SelectorFeatureGroup(FeatureGroup):
    """Matches ``FEATURE_NAME`` only when option ``SELECTOR`` equals this class's ``BACKEND``.

    A family base leaves ``BACKEND`` as None and therefore matches nothing; each backend sets it, so values are
    disjoint per backend. A selector naming no enabled backend, and a key no backend of the request declares in
    ``OPTIONS``, are refused with our typed errors while mloda matches (``core.contract.declarations``).
    """

    FAMILY: ClassVar[str] = ""
    DOCS_PAGE: ClassVar[str] = ""
    """The page under ``docs/`` whose options tables document this class (``<FAMILY>.md`` when empty)."""
    FEATURE_NAME: ClassVar[str] = ""
    SELECTOR: ClassVar[str] = ""
    BACKEND: ClassVar[str | None] = None
    EXTRA: ClassVar[str | None] = None
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ()
    SOURCES: ClassVar[tuple[Source, ...]] = ()
    """The family's inputs that come inline or from an upstream feature (``core.contract.sources``)."""
    OPTIONS: ClassVar[tuple[str, ...]] = option_keys(DEADLINE_MS, SHOW_PROGRESS, PROFILE, PRINCIPALS, UNLABELLED)
    """The option keys this class reads, besides the selector and its ``SOURCES``. A family
    base lists the family's keys and a backend only its own: ``declared_options`` adds up the whole class ladder."""

    CONTRACT_VERSION: ClassVar[str] = "1.0"
    """The family's contract, ``"MAJOR.MINOR"`` (docs/plugins.md: what bumps which); each family base sets it."""
    SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ()
    """The contract versions a third-party backend was written against; it is refused unless one is its family's.
    Empty for this package's own backends, which always follow their family."""

    PROFILES: ClassVar[Mapping[str, Profile]] = {}
    """Named presets of this backend's options with a latency budget (``core.contract.profiles``); none declared
    means one, ``default``, without presets."""
    SECRET_OPTIONS: ClassVar[Mapping[str, str]] = {}
    """Options whose value is a secret (``"value"``) or names the environment variable holding one (``"env"``):
    ``certify`` checks that the secret never shows in rows, errors, logs or its report."""

    SETTINGS: ClassVar[type[Any] | None] = None
    """The frozen dataclass a backend's own options are read into; each option is declared once, as a field
    (``core.options.option``), and adds its key to ``declared_options``."""

    @classmethod
    def declared_options(cls) -> frozenset[str]:
        """Every option key a request for this backend may carry: ``OPTIONS`` and ``SETTINGS`` of this class and
        its bases."""
        keys: set[str] = set()
        for klass in cls.__mro__:
            keys.update(_own_options(klass))
        keys.add(cls.SELECTOR)
        for source in cls.SOURCES:
            keys.update((source.inline, source.upstream))
        return frozenset(keys)

    @classmethod
    def own_options(cls) -> tuple[str, ...]:
        """The keys this class itself declares (its ``OPTIONS`` and ``SETTINGS``), not its bases': what a backend
        built from others (``hybrid_rrf``) adds up."""
        return _own_options(cls)

    @classmethod
    def read_settings(cls, reader: OptionReader) -> Any:
        """The backend's options as a frozen, picklable dataclass, validated once per request: ``SETTINGS`` read
        from its declarations, or ``NoSettings``. Override to check options against each other."""
        return read_options(cls.SETTINGS, reader) if cls.SETTINGS is not None else NoSettings()

    @classmethod
    def serves(cls, feature_name: str) -> bool:
        """True for the feature names this family computes."""
        return feature_name == cls.FEATURE_NAME

    @staticmethod
    def loaded_backends() -> list[type[SelectorFeatureGroup]]:
        """Every imported backend class (a subclass with ``BACKEND`` set), in a stable order."""
        found: dict[type[SelectorFeatureGroup], None] = {}
        pending = list(SelectorFeatureGroup.__subclasses__())
        while pending:
            candidate = pending.pop()
            pending.extend(candidate.__subclasses__())
            if candidate.BACKEND is not None:
                found.setdefault(candidate)
        return sorted(found, key=lambda backend: (backend.__module__, backend.__qualname__))

    @classmethod
    def match_feature_group_criteria(
        cls,
        feature_name: FeatureName | str,
        options: Options,
        data_access_collection: DataAccessCollection | None = None,
    ) -> bool:
        if cls.BACKEND is None or not cls.serves(str(feature_name)):
            return False
        selected = options.get(cls.SELECTOR)
        if not (isinstance(selected, str) and selected == cls.BACKEND):
            check_selector(str(feature_name), options, cls.loaded_backends())
            return False
        try:
            cls.check_contract()
            cls.profile_options(options)
        except (ContractVersionError, UnknownProfileError) as error:
            raise escalate_match_abort(error) from None
        check_unique_selection(cls, cls.loaded_backends())
        check_request_options(options, cls.loaded_backends())
        _compact_corpora(options, tuple(source.inline for source in cls.SOURCES if source.documents))
        _set_aside_unwritable(options)
        return True

    def input_features(self, options: Options, feature_name: FeatureName) -> set[Feature] | None:
        """Upstream features named by this family's ``*_source`` options; a request without them is a root.

        A source is a feature name or a mloda ``Feature``. A name receives this request's options, so a chain of
        steps shares one set of options; a ``Feature`` keeps exactly its own (each step its own ``top_k``). A
        source given together with its inline alternative, of a wrong type, or naming the requested feature itself
        is not declared, so the request reaches ``answer`` and fails there with a typed error instead of in
        mloda's resolution.
        """
        upstream: set[Feature] = set()
        for declared in self.SOURCES:
            source = options.get(declared.upstream)
            if options.get(declared.inline) is not None:
                continue
            if isinstance(source, Feature) or (
                isinstance(source, str) and source.strip() and source != str(feature_name)
            ):
                upstream.add(upstream_feature(source, options))
        return upstream or None

    @classmethod
    def check_contract(cls) -> None:
        """Refuse a backend whose ``SUPPORTED_CONTRACTS`` are malformed or do not list its family's
        ``CONTRACT_VERSION`` (a major it does not know, or a minor it does not list): ``ContractVersionError``
        naming the backend, its distribution and both versions. Checked when a request selects the backend."""
        if cls.BACKEND is None or not cls.SUPPORTED_CONTRACTS:
            return
        supported = cls.SUPPORTED_CONTRACTS
        if isinstance(supported, str) or not all(
            isinstance(version, str) and CONTRACT_FORM.fullmatch(version) for version in supported
        ):
            raise ContractVersionError(
                cls.BACKEND, distribution_of(cls), cls.CONTRACT_VERSION, list(supported), "declares malformed versions"
            )
        if cls.CONTRACT_VERSION not in supported:
            major = cls.CONTRACT_VERSION.split(".")[0]
            problem = (
                "does not list this minor version"
                if any(version.split(".")[0] == major for version in supported)
                else "was written for another major version"
            )
            raise ContractVersionError(cls.BACKEND, distribution_of(cls), cls.CONTRACT_VERSION, supported, problem)

    @classmethod
    def profiles(cls) -> Mapping[str, Profile]:
        """The declared profiles, or the implicit ``default`` one."""
        return cls.PROFILES or IMPLICIT_PROFILES

    @classmethod
    def profile_options(cls, options: Options | Mapping[str, Any]) -> Mapping[str, Any]:
        """The presets of the profile a request names (``default`` when it names none); ``UnknownProfileError``
        listing the declared ones when the backend has no such profile."""
        name = options.get(PROFILE.key)
        if name is None:
            name = PROFILE.default
        profiles = cls.profiles()
        if not isinstance(name, str) or name not in profiles:
            raise UnknownProfileError(str(cls.BACKEND), name, sorted(profiles))
        return profiles[name].options

    @classmethod
    def with_profile(cls, options: Options | Mapping[str, Any]) -> Options | Mapping[str, Any]:
        """The request's options over its profile's presets (the options themselves when it presets nothing)."""
        presets = cls.profile_options(options)
        if not presets:
            return options
        if isinstance(options, Options):
            return {**presets, **options.context, **options.group}
        return {**presets, **options}

    @classmethod
    def declaration_problems(cls) -> list[str]:
        """What this backend class declares wrongly for its family (empty when nothing): checked by
        ``discover_backends`` for every backend an entry point brings."""
        problems = []
        if not isinstance(cls.BACKEND, str) or not SELECTOR_VALUE.fullmatch(cls.BACKEND):
            problems.append(
                f"BACKEND must be a lower-case ASCII identifier (letters, digits, '_'), got {cls.BACKEND!r}: a value "
                "users type and read must not hide look-alike characters"
            )
        family_base = next((klass for klass in cls.__mro__[1:] if klass.__dict__.get("FAMILY")), None)
        for name in ("FAMILY", "FEATURE_NAME", "SELECTOR"):
            if family_base is not None and getattr(cls, name) != getattr(family_base, name):
                problems.append(
                    f"{name} is {getattr(cls, name)!r}, its family base {family_base.__name__} says "
                    f"{getattr(family_base, name)!r}"
                )
        if cls.EXTRA is not None and not isinstance(cls.EXTRA, str):
            problems.append(f"EXTRA must be a str or None, got {cls.EXTRA!r}")
        modules = cls.REQUIRED_MODULES
        if not isinstance(modules, tuple) or not all(isinstance(module, str) and module for module in modules):
            problems.append(f"REQUIRED_MODULES must be a tuple of module names, got {modules!r}")
        try:
            cls.check_contract()
        except ContractVersionError as error:
            problems.append(str(error))
        declared = cls.declared_options()
        sources = {key for source in cls.SOURCES for key in (source.inline, source.upstream)}
        problems += profile_problems(cls.PROFILES, declared, frozenset({cls.SELECTOR, *sources}))
        secrets = cls.SECRET_OPTIONS
        if not isinstance(secrets, Mapping):
            problems.append(f"SECRET_OPTIONS must be a mapping of option keys to 'value' or 'env', got {secrets!r}")
        else:
            for key, kind in secrets.items():
                if key not in declared:
                    problems.append(f"SECRET_OPTIONS names {key!r}, which the backend does not declare")
                if kind not in ("value", "env"):
                    problems.append(f"SECRET_OPTIONS[{key!r}] is {kind!r}: expected 'value' or 'env'")
        return problems

    @classmethod
    def is_installed(cls) -> bool:
        return modules_installed(cls.REQUIRED_MODULES)

    @classmethod
    def certification_adapter(cls) -> dict[str, Any]:
        """What ``rag-integration certify`` cannot guess about this backend: kit hooks' values by name (e.g.
        ``{"matches_by_word_overlap": False}``), ``backend_options`` every request needs, and ``kit``
        (``"module:Class"``) naming a kit to use instead of the family's (docs: plugins.md, "Certify")."""
        return {}

    @classmethod
    def compute_framework_rule(cls) -> set[type[ComputeFramework]] | None:
        """The frameworks every connector serves: the loaded mloda frameworks that ``core.contract.frames`` has an adapter for."""
        return framework_classes()

    @classmethod
    def calculate_feature(cls, data: object, features: FeatureSet) -> object:
        options = _single_request_options(features, cls.FEATURE_NAME)
        _refuse_unwritable(options)
        reader = OptionReader(cls.with_profile(options), owner=f"{cls.__name__} ({cls.FEATURE_NAME})")
        adapter = adapter_for(next(iter(features.features)).get_compute_framework().get_class_name())
        with (
            deadline_scope(Deadline.read(reader)),
            showing_progress(SHOW_PROGRESS.read(reader)),
            step(f"{cls.FEATURE_NAME} ({cls.BACKEND})"),
        ):
            return cls.answer_frame(adapter, data, reader)

    @classmethod
    def answer_frame(cls, adapter: FrameworkAdapter, data: object, reader: OptionReader) -> object:
        """The framework's own output: upstream rows read once, answered, and the typed column appended."""
        readable = adapter.readable(data)
        values = list(cls.answer(readable, reader)[cls.FEATURE_NAME])
        check_deadline(f"while {cls.__name__} answered")
        return adapter.write(cls.FEATURE_NAME, values, cls.output_shape(reader), readable)

    @classmethod
    def output_shape(cls, reader: OptionReader) -> Shape:
        """The typed shape of one output row (``core.contract.schema``); passages unless a family says otherwise,
        with ``explanation`` where the family declares ``explain`` and the request asks for it."""
        explained = EXPLAIN.key in cls.declared_options() and EXPLAIN.read(reader)
        return passages_shape(RETURN_METADATA.read(reader), explained)

    @classmethod
    def answer(cls, data: ReadableFrame | None, reader: OptionReader) -> Mapping[str, Any]:
        """Answer one request; ``data`` carries the upstream features' columns (None for a root)."""
        raise NotImplementedError


def _single_request_options(features: FeatureSet, feature_name: str) -> Options:
    """mloda merges same-named requests whose group options are equal; refuse that instead of answering one."""
    requested = sorted(features.features, key=lambda feature: str(feature.name))
    first = requested[0].options
    for other in requested[1:]:
        if other.options.context != first.context or other.options.group != first.group:
            differing = _first_differing_key(first, other.options)
            raise InvalidOptionError(
                differing,
                other.options.get(differing),
                f"one value per '{feature_name}' request: mloda merges requests whose group options are equal, "
                "so pass a list of queries in one request or put per-request options in Options(group=...)",
            )
    return first


def _first_differing_key(first: Options, second: Options) -> str:
    keys = sorted(set(first.keys()) | set(second.keys()))
    for key in keys:
        if first.get(key) != second.get(key):
            return key
    return keys[0] if keys else "options"


def upstream_feature(source: Feature | str, options: Options) -> Feature:
    """The upstream feature a ``*_source`` option names: a name receives this request's options (a chain shares
    one set), a mloda ``Feature`` keeps exactly its own."""
    if isinstance(source, Feature):
        own = Options(group=dict(source.options.group), context=dict(source.options.context))
        return Feature(source.name, options=own, forward_group=False)
    return Feature(source, options=options)


def source_feature_name(reader: OptionReader, key: str) -> str | None:
    """The column an upstream feature named by option ``key`` arrives in, or None when the option is absent."""
    value = reader.raw(key)
    if value is None:
        return None
    if isinstance(value, Feature):
        return str(value.name)
    if isinstance(value, str) and value.strip():
        return value
    raise InvalidOptionError(key, value, "the name of an upstream feature (str) or a mloda Feature")


def _compact_corpora(options: Options, keys: tuple[str, ...]) -> None:
    """Swap a context list of documents for a ``Corpus`` once this backend is chosen.

    mloda copies and hashes a request's options several times while planning; a ``Corpus`` makes that constant
    time instead of a walk over every document. mloda documents that a matcher's writes reach the feature when it
    wins. Only ``context`` is touched (``group`` is the request's identity), and a list that is not a valid corpus
    is left alone, so the request still fails with its typed error when it is answered.

    Reading a corpus here is held to the request's ``deadline_ms`` too: a corpus too large to read in time is left
    a list, and answering reads it again under its own deadline, which then names the step that ran out.
    """
    if not any(isinstance(options.context.get(key), list) and options.context.get(key) for key in keys):
        return
    try:
        limit = Deadline.read(OptionReader(options))
    except ConnectorError:  # a bad deadline_ms is refused, typed, when the request is answered
        return
    with deadline_scope(limit):
        for key in keys:
            value = options.context.get(key)
            if isinstance(value, list) and value:
                try:
                    options.context[key] = Corpus(value, key)
                except ConnectorError:
                    continue


class UnwritableOption:
    """Stands in for an option value that ``repr`` cannot write: an int past Python's int/str conversion limit
    (4,300 digits) or nesting past the recursion limit. mloda writes every option with ``repr`` while planning, where
    such a value raises a bare ``ValueError``; set aside, the request is planned and then refused with a typed error."""

    __slots__ = ("text",)

    def __init__(self, value: object) -> None:
        self.text = short_repr(value)

    def __repr__(self) -> str:
        return self.text


UNWRITABLE_EXPECTED = (
    "a value Python can write out: ints of at most 4,300 digits, nesting within the recursion limit "
    "(mloda writes every option while planning)"
)


def _set_aside_unwritable(options: Options) -> None:
    """Swap each option value ``repr`` cannot write for an ``UnwritableOption``. The request is refused when it is
    answered, so swapping a ``group`` value (the request's identity) cannot make it answer something else."""
    for part in (options.context, options.group):
        for key, value in list(part.items()):
            if isinstance(value, (int, list, tuple, dict, set, frozenset)) and not isinstance(value, bool):
                try:
                    repr(value)
                except (ValueError, RecursionError):
                    part[key] = UnwritableOption(value)


def _refuse_unwritable(options: Options) -> None:
    for part in (options.group, options.context):
        for key, value in part.items():
            if isinstance(value, UnwritableOption):
                raise InvalidOptionError(key, value, UNWRITABLE_EXPECTED)


def _own_options(klass: type) -> tuple[str, ...]:
    """The keys ``klass`` itself declares in ``OPTIONS`` and ``SETTINGS`` (none for a class that is not ours)."""
    settings = klass.__dict__.get("SETTINGS")
    declared = tuple(spec.key for spec in option_specs(settings)) if settings is not None else ()
    return (*klass.__dict__.get("OPTIONS", ()), *declared)
