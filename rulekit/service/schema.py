"""The Service's wire schema (pydantic): request bodies and their validation.

A request carries a job record (`rulekit.inputs.jobrecord.JobRecord`, the very
schema the CLI's job.toml reader uses) and observations:

    {"job": {...},
     "observations": [{"kind": "log", "source": "syslog", "node": "n1", "format": "text", "lines": ["..."]},
                      {"kind": "metric", "node": "n1", "name": "...", "labels": {...}, "samples": [[t, v], ...]},
                      {"kind": "flight_recorder", "rank": 3, "dump": {...}}],
     "metrics": [{"node": "n1", "name": "...", "labels": {...}, "samples": [[t, v], ...]}],
     "fleet": {"window_s": ..., "ambiguous": [...], "nodes": {"n1": {"state": "suspect", ...}}}}   # optional

`observations` is a list discriminated by `kind` (default `log`; also
`metric` and `flight_recorder`, one rank's dump as JSON): a new observation
kind is one more model in `ObservationItem` and one more branch in
`to_inputs`.  A dump the flight-recorder reader refuses is a validation
error at that item (422).  `metrics` is the same
as `kind: metric` items, kept as its own key for producers that only send
metrics.  Bodies are parsed by pydantic's JSON parser straight from bytes
(invalid UTF-8, bad JSON, nesting deeper than its limit are `json_invalid`
errors).  Knows no HTTP.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, StrictStr, Tag, field_validator,
                      model_validator)

from rulekit.inputs.fleet import FleetContext, FleetContextError
from rulekit.inputs.flight_recorder import FRDumpError, observation_from_record
from rulekit.inputs.jobrecord import JobRecord
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.metrics_model import MetricRecord
from rulekit.inputs.observation import Observation

MAX_ITEMS = 100_000
MAX_LINES = 5_000_000
MAX_SAMPLE_VALUE_DIGITS = 64


class LogObservation(BaseModel):
    """Evidence lines from one source (applog, syslog, ...), optionally of one node."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["log"] = "log"
    source: StrictStr = Field(min_length=1, max_length=128, description="applog | syslog | scheduler | ...")
    node: Optional[StrictStr] = Field(default=None, max_length=512)
    format: StrictStr = Field(default="text", max_length=64)
    label: Optional[StrictStr] = Field(default=None, max_length=1024, description="provenance shown in evidence")
    lines: list[StrictStr] = Field(max_length=MAX_LINES)


class FlightRecorderObservation(BaseModel):
    """One rank's PyTorch flight-recorder dump, as JSON (`rulekit.inputs.flight_recorder` reads it)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["flight_recorder"]
    rank: int = Field(ge=0, le=10_000_000)
    dump: dict[str, Any]
    label: Optional[StrictStr] = Field(default=None, max_length=1024)
    _observation: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _readable(self) -> "FlightRecorderObservation":
        """Read the dump now, so a refused one is a 422 at this item (never a failure later)."""
        label = self.label or f"flight_recorder.rank{self.rank}"
        try:
            self._observation = observation_from_record({"rank": self.rank, "dump": self.dump}, label)
        except FRDumpError as e:
            raise ValueError(f"the flight-recorder dump is refused: {e.message}") from None
        return self


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        k = v.get("kind", "log")
        return k if isinstance(k, str) else "?"
    return getattr(v, "kind", "log")


ObservationItem = Annotated[
    Union[Annotated[LogObservation, Tag("log")], Annotated[MetricRecord, Tag("metric")],
          Annotated[FlightRecorderObservation, Tag("flight_recorder")]],
    Discriminator(_kind, custom_error_type="unknown_kind",
                  custom_error_message="unknown observation kind; known: log, metric, flight_recorder"),
]


class ObservationBatch(BaseModel):
    """Observations to ingest (`POST /v1/jobs/{id}/observations`)."""

    model_config = ConfigDict(extra="forbid")

    observations: list[ObservationItem] = Field(default_factory=list, max_length=MAX_ITEMS)
    metrics: list[MetricRecord] = Field(default_factory=list, max_length=MAX_ITEMS)

    def to_inputs(self, prefix: str = "observations") -> tuple[list[Observation], list[MetricSeries]]:
        obs: list[Observation] = []
        series: list[MetricSeries] = []
        for i, o in enumerate(self.observations):
            if isinstance(o, LogObservation):
                obs.append(Observation(source=o.source, format=o.format, node=o.node,
                                       label=o.label or f"{prefix}[{i}]", lines=o.lines))
            elif isinstance(o, FlightRecorderObservation):
                obs.append(o._observation)
            else:
                series.append(o.to_series())
        series.extend(m.to_series() for m in self.metrics)
        return obs, series


class CreateJob(BaseModel):
    """`POST /v1/jobs`: open a job for the ingest/attribute cycle."""

    model_config = ConfigDict(extra="forbid")

    job: JobRecord


class AttributeRequest(ObservationBatch):
    """`POST /v1/attribute`: a job record and all its observations -> one result.
    `fleet` (optional): what a store remembers of the job's nodes (`FleetContext`'s JSON
    form, as the Blueprint sends it); without it the job is judged on its own evidence."""

    job: JobRecord
    fleet: Optional[dict[str, Any]] = None

    @field_validator("fleet")
    @classmethod
    def _fleet_readable(cls, v: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
        if v is not None:
            try:
                FleetContext.from_dict(v)
            except FleetContextError as e:
                raise ValueError(str(e)) from None
        return v

    def fleet_context(self) -> FleetContext | None:
        return FleetContext.from_dict(self.fleet) if self.fleet is not None else None


class ErrorItem(BaseModel):
    loc: list[Union[str, int]]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every 4xx / 5xx body: what was wrong, and where (`loc`, the field's path)."""

    detail: list[ErrorItem]
    error_id: Optional[str] = None


class JobCreated(BaseModel):
    id: str
    job_id: str
    expires_in_s: float


class JobStatus(BaseModel):
    id: str
    job_id: str
    observations: int
    metric_series: int
    events: int
    idle_s: float
    expires_in_s: float


class Ingested(BaseModel):
    id: str
    observations: int
    metric_series: int
    events_added: int
