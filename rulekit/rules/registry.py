"""The symptom registry: symptom name -> outcome, sub_domain, rank, docs, aliases,
blame and action, plus the outcome mapping rules (prefix defaults).  Built once from the loaded
declarations and immutable afterwards.  No I/O.
"""
from __future__ import annotations

from typing import Iterable

from rulekit.rules.records import dataclass
from rulekit.rules.model import OutcomeRule, Symptom

# the action a blamed node gets when neither the symptom nor its outcome rule names one
DEFAULT_ACTION = {"node": "inspect", "link": "check_link", "peer": "inspect", "storage": "inspect", "service": "inspect"}


@dataclass(frozen=True)
class SymptomInfo:
    name: str
    outcome: str
    sub_domain: str
    rank: int
    docs: str
    registered: bool  # False: known only through an outcome rule prefix
    blame: str | None = None  # None: nobody said (the corpus check RK208 reports it)
    action: str = "none"


class SymptomRegistry:
    """Registered symptoms (with aliases) and prefix outcome rules."""

    def __init__(self, symptoms: Iterable[Symptom], outcome_rules: Iterable[OutcomeRule] = ()):
        self._by_name: dict[str, Symptom] = {}
        self._alias: dict[str, str] = {}
        for s in symptoms:
            self._by_name.setdefault(s.name, s)
            for a in s.aliases:
                self._alias.setdefault(a, s.name)
        # longest prefix first
        self._rules = sorted(outcome_rules, key=lambda r: len(r.prefix), reverse=True)
        self._info: dict[str, SymptomInfo] = {}  # memo: the registry never changes

    def fingerprint(self) -> tuple:
        """What the registry answers from (its symptoms, aliases and outcome rules): two
        registries with equal fingerprints answer every question alike."""
        fp = getattr(self, "_fingerprint", None)
        if fp is None:
            fp = self._fingerprint = (tuple(self._by_name.values()), tuple(self._alias.items()), tuple(self._rules))
        return fp

    def canonical(self, name: str) -> str:
        return self._alias.get(name, name)

    def symptom(self, name: str) -> Symptom | None:
        return self._by_name.get(self.canonical(name))

    def prefix_rule(self, name: str) -> OutcomeRule | None:
        for r in self._rules:
            if name.startswith(r.prefix):
                return r
        return None

    def is_known(self, name: str) -> bool:
        """Registered, or fully described (outcome, sub_domain, rank) by an outcome rule."""
        if self.symptom(name) is not None:
            return True
        r = self.prefix_rule(name)
        return r is not None and r.outcome is not None and r.rank is not None

    def info(self, name: str) -> SymptomInfo:
        got = self._info.get(name)
        if got is None:
            got = self._info[name] = self._lookup(name)
        return got

    def _lookup(self, name: str) -> SymptomInfo:
        s = self.symptom(name)
        if s is not None:
            blame, action = self._blame_action(s.name, s.blame, s.action)
            return SymptomInfo(s.name, s.outcome, s.sub_domain, s.rank, s.docs, True, blame, action)
        r = self.prefix_rule(name)
        if r is not None:
            blame, action = self._blame_action(name, r.blame, r.action)
            return SymptomInfo(name, r.outcome or "unknown", r.sub_domain or "unknown", r.rank or 0, "", False,
                               blame, action)
        return SymptomInfo(name, "unknown", "unknown", 0, "", False)

    def _blame_action(self, name: str, blame: str | None, action: str | None) -> tuple[str | None, str]:
        """The symptom's own blame/action, else the longest outcome rule that sets one,
        else the blame's default action."""
        own_blame = blame
        if blame is None:
            for r in self._rules:
                if name.startswith(r.prefix) and r.blame is not None:
                    blame = r.blame
                    break
        if action is None:
            # a prefix's action goes with its blame: a symptom that sets its own, different
            # blame (an application-class Xid under `XID-`) does not inherit the family's action
            for r in self._rules:
                if name.startswith(r.prefix) and r.action is not None and (
                        own_blame is None or r.blame in (None, own_blame)):
                    action = r.action
                    break
        if action is None:
            action = DEFAULT_ACTION.get(blame or "", "none")
        return blame, action

    def blame(self, name: str) -> str | None:
        return self.info(name).blame

    def action(self, name: str) -> str:
        return self.info(name).action

    def rank(self, name: str) -> int:
        return self.info(name).rank

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def all(self) -> list[Symptom]:
        return [self._by_name[n] for n in sorted(self._by_name)]

    def aliases(self) -> dict[str, str]:
        return dict(self._alias)

    @property
    def outcome_rules(self) -> list[OutcomeRule]:
        return list(self._rules)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.is_known(name)

    def __len__(self) -> int:
        return len(self._by_name)
