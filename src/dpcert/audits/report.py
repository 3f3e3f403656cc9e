"""The result of an audit: a JSON-serialisable value that can be re-checked from its counts alone."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpcert import _json
from dpcert._notebook import html_table, markdown_table
from dpcert.audits.epsilon_lower_bound import (
    EvaluationCounts,
    bound_from_counts,
    draws_to_exceed,
    epsilon_ceiling,
)
from dpcert.audits.neighbours import Relation
from dpcert.audits.rejection_set import RejectionSet
from dpcert.certificates import Guarantee
from dpcert.errors import CertificateFormatError, CertificateMismatch

FORMAT = "dpcert.audit/1"
VERDICTS = ("consistent", "violated")


def verdict_for(epsilon_lower_bound: float, claimed_epsilon: float) -> str:
    """``"violated"`` exactly when the lower confidence bound exceeds the claimed ε."""
    return "violated" if epsilon_lower_bound > claimed_epsilon else "consistent"


@dataclass(frozen=True)
class AuditReport:
    """What an audit found.

    Parameters
    ----------
    verdict
        ``"violated"`` if ``epsilon_lower_bound > claim.epsilon``, else ``"consistent"``.
    epsilon_lower_bound
        A (``confidence``) lower confidence bound on the ε at which the mechanism is (ε, δ)-DP for the
        claimed δ (never negative).
    confidence
        1 − α.
    samples
        Draws per input (selection and evaluation together).
    method
        How the bound was obtained, e.g. ``"clopper-pearson/threshold"``.
    claim
        The (ε, δ) under test.
    counts
        Evaluation counts of the rejection set: the whole statistical evidence.
    rejection_set
        The set S, chosen on the selection draws only.
    epsilon_ceiling
        The largest bound these evaluation counts could ever give (≈ ln n).
    inputs
        The two neighbouring inputs, JSON-ready (with a search: the pair it found).
    search
        With a neighbour search: the candidates screened, the draws spent and the pair chosen
        (JSON-ready); ``samples`` and ``counts`` then refer to the fresh draws on the chosen pair.
    relation
        The neighbour relation the pair belongs to (stated by the search or the caller), or None when
        the pair was taken as given: the verdict speaks of ε under this relation only.

    A bound of 0 means that no informative event was found (``informative`` is False): the rejection
    set's counts show no output more likely under one input than under the other.  The report then
    says so, with the counts of the best event, rather than "ε >= 0".
    """

    verdict: str
    epsilon_lower_bound: float
    confidence: float
    samples: int
    method: str
    claim: Guarantee
    counts: EvaluationCounts
    rejection_set: RejectionSet
    epsilon_ceiling: float
    inputs: tuple[Any, Any] = (None, None)
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    search: Mapping[str, Any] | None = field(default=None, hash=False)
    relation: Relation | None = None

    @property
    def violated(self) -> bool:
        return self.verdict == "violated"

    @property
    def informative(self) -> bool:
        """False when the best event's counts give no evidence at all (a bound of 0)."""
        return self.epsilon_lower_bound > 0.0

    def evaluation_draws_needed(self) -> int | None:
        """When the ceiling binds: the least evaluation draws per input whose ceiling exceeds the claim."""
        if not self.ceiling_binds:
            return None
        return draws_to_exceed(self.claim.epsilon, self.claim.delta, self.confidence)

    @property
    def ceiling_binds(self) -> bool:
        """True if no outcome of these evaluation draws could refute the claim."""
        return self.claim.epsilon >= self.epsilon_ceiling

    def recheck(self) -> AuditReport:
        """Recompute the bound, the ceiling and the verdict from the counts; raise if they differ."""
        bound = bound_from_counts(self.counts, self.claim.delta, self.confidence).epsilon_lower_bound
        ceiling = epsilon_ceiling(self.counts.draws_numerator, self.claim.delta, self.confidence)
        verdict = verdict_for(bound, self.claim.epsilon)
        if not (
            math.isclose(bound, self.epsilon_lower_bound, rel_tol=1e-12, abs_tol=1e-15)
            and math.isclose(ceiling, self.epsilon_ceiling, rel_tol=1e-12, abs_tol=1e-15)
            and verdict == self.verdict
        ):
            raise CertificateMismatch(
                f"audit report states epsilon_lower_bound={self.epsilon_lower_bound!r} "
                f"({self.verdict}) but its counts give {bound!r} ({verdict})"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "verdict": self.verdict,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "confidence": self.confidence,
            "samples": self.samples,
            "method": self.method,
            "claimed_epsilon": self.claim.epsilon,
            "claimed_delta": self.claim.delta,
            "counts": self.counts.to_dict(),
            "rejection_set": self.rejection_set.to_dict(),
            "epsilon_ceiling": self.epsilon_ceiling,
            "ceiling_binds": self.ceiling_binds,
            "inputs": list(self.inputs),
            "seconds": self.seconds,
            "notes": list(self.notes),
            "search": None if self.search is None else dict(self.search),
            "relation": None if self.relation is None else self.relation.to_dict(),
            "informative": self.informative,
            "evaluation_draws_needed": self.evaluation_draws_needed(),
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, recheck: bool = True) -> AuditReport:
        try:
            if data.get("format", FORMAT) != FORMAT:
                raise CertificateFormatError(f"unsupported audit report format {data.get('format')!r}")
            counts = data["counts"]
            report = cls(
                verdict=str(data["verdict"]),
                epsilon_lower_bound=float(data["epsilon_lower_bound"]),
                confidence=float(data["confidence"]),
                samples=int(data["samples"]),
                method=str(data["method"]),
                claim=Guarantee(float(data["claimed_epsilon"]), float(data["claimed_delta"])),
                counts=EvaluationCounts(
                    counts["numerator"],
                    counts["in_set_numerator"],
                    counts["draws_numerator"],
                    counts["in_set_denominator"],
                    counts["draws_denominator"],
                ),
                rejection_set=RejectionSet.from_dict(data["rejection_set"]),
                epsilon_ceiling=float(data["epsilon_ceiling"]),
                inputs=tuple(data.get("inputs", (None, None))),
                seconds=float(data.get("seconds", 0.0)),
                notes=tuple(str(n) for n in data.get("notes", ())),
                search=data.get("search"),
                relation=Relation.from_dict(data.get("relation")),
            )
        except CertificateFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CertificateFormatError(f"malformed audit report: {exc}") from exc
        if report.verdict not in VERDICTS:
            raise CertificateFormatError(f"unknown verdict {report.verdict!r}")
        return report.recheck() if recheck else report

    @classmethod
    def from_json(cls, text: str, *, recheck: bool = True) -> AuditReport:
        """Parse a saved report; by default re-derive its bound and verdict from the counts.

        A duplicate key at any depth, ``NaN`` or ``Infinity`` is refused naming the key and where it is
        (:class:`~dpcert._json.JSONFormatError`, a :class:`CertificateFormatError`).
        """
        data = _json.loads(text, what="audit report")
        if not isinstance(data, dict):
            raise CertificateFormatError("audit report JSON must be an object")
        return cls.from_dict(data, recheck=recheck)

    def neighbours(self) -> str:
        """The relation audited, in words."""
        return "as given (not checked)" if self.relation is None else self.relation.describe()

    def finding(self) -> str:
        """The bound, or that no informative event was found, with the best event's counts."""
        if self.informative:
            return f"epsilon >= {self.epsilon_lower_bound:.4f} with confidence {self.confidence:g}"
        return f"no informative event found (best event: {self.counts_text()})"

    def counts_text(self) -> str:
        """The evaluation counts of the rejection set, input by input."""
        counts = self.counts
        other = "b" if counts.numerator == "a" else "a"
        return (
            f"{counts.in_set_numerator}/{counts.draws_numerator} draws on {counts.numerator} and "
            f"{counts.in_set_denominator}/{counts.draws_denominator} on {other} in S"
        )

    def ceiling_text(self) -> str:
        """The largest bound the draws could have shown, and the draws needed when it binds."""
        text = f"{self.epsilon_ceiling:.4g}"
        needed = self.evaluation_draws_needed()
        if needed is not None:
            text += f" (at or below the claim: at least {needed} evaluation draws per input are needed)"
        return text

    def _notebook_rows(self) -> list[tuple[str, Any]]:
        return [
            ("verdict", self.verdict),
            ("finding", self.finding()),
            ("claim", f"(ε = {self.claim.epsilon:g}, δ = {self.claim.delta:g})"),
            ("neighbours", self.neighbours()),
            ("draws per input", self.samples),
            ("rejection set", f"{self.rejection_set.describe()}: {self.counts_text()}"),
            ("largest bound these draws could show", self.ceiling_text()),
            ("method", self.method),
        ]

    def _repr_markdown_(self) -> str:
        return markdown_table("Audit report", self._notebook_rows(), self.notes)

    def _repr_html_(self) -> str:
        return html_table("Audit report", self._notebook_rows(), self.notes)

    def summary(self) -> str:
        """One line for humans."""
        found = ""
        if self.search is not None:
            found = f"; pair found by the {self.search['kind']} search: {self.inputs[0]} vs {self.inputs[1]}"
        return (
            f"{self.verdict}: {self.finding()} "
            f"(claim epsilon={self.claim.epsilon:g}, delta={self.claim.delta:g}; "
            f"neighbours {self.neighbours()}; {self.samples} draws per input; "
            f"S = {self.rejection_set.describe()}; largest bound these draws could show "
            f"{self.ceiling_text()}{found})"
        )
