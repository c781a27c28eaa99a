"""The pydantic models of the one job-record schema (`rulekit.inputs.jobrecord`
describes the rules and re-exports these names): `JobRecord` and its two scheduler
tables.  The Service embeds `JobRecord` in its request bodies; `parse_job_record`
uses it for every record its plain reader does not accept.  Each check is the plain
function of `rulekit.inputs.jobrecord_rules` it calls (as the plain reader does), so
the two readers cannot drift.
Imported on first use (pydantic costs a start-up ~0.1 s): nothing on the path of
`rulekit attribute` for a valid job.toml imports it.  Validates only; reads no file.
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationInfo, field_validator

from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.jobrecord_rules import (
    ID_MAX,
    NODE_MAX,
    NODES_MAX,
    TASKS_PER_NODE_RANGE,
    end_after_start,
    exit_code_text,
    known_state,
    parse_time,
    rank_keys,
    rank_numbers,
    to_jobinfo,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AllocationFailureRecord(_Strict):
    """The allocation's failure as the scheduler reported it."""

    allocation_id: StrictStr = Field(min_length=1)
    state: StrictStr = Field(min_length=1)
    failed_node: Optional[StrictStr] = Field(default=None, max_length=NODE_MAX)
    source: StrictStr = "scheduler"
    time: Optional[datetime] = None

    @field_validator("time", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)


class ExecutionCancellationRecord(_Strict):
    """A cancellation the caller established for this record."""

    record_id: StrictStr = Field(min_length=1)
    cancelled_by: StrictStr = Field(min_length=1)
    source_time: datetime

    @field_validator("source_time", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)


class JobRecord(_Strict):
    """One scheduler job record (see the module docstring for the rules)."""

    id: StrictStr = Field(min_length=1, max_length=ID_MAX)
    state: Optional[StrictStr] = None
    nodes: list[Annotated[StrictStr, Field(max_length=NODE_MAX)]] = Field(default_factory=list, max_length=NODES_MAX)
    start: Optional[datetime] = None
    end: Optional[datetime] = None
    failed_node: Optional[StrictStr] = Field(default=None, max_length=NODE_MAX)
    exit_code: Optional[str] = None
    tasks_per_node: Optional[StrictInt] = Field(default=None, ge=TASKS_PER_NODE_RANGE[0], le=TASKS_PER_NODE_RANGE[1])
    ranks: dict[StrictStr, Annotated[StrictStr, Field(max_length=NODE_MAX)]] = Field(default_factory=dict)
    allocation_failure: Optional[AllocationFailureRecord] = None
    execution_cancellation: Optional[ExecutionCancellationRecord] = None

    @field_validator("state")
    @classmethod
    def _known_state(cls, v: str | None) -> str | None:
        return known_state(v)

    @field_validator("exit_code", mode="before")
    @classmethod
    def _exit_code(cls, v: Any) -> str | None:
        return exit_code_text(v)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)

    @field_validator("ranks", mode="before")
    @classmethod
    def _rank_keys(cls, v: Any) -> Any:
        return rank_keys(v)

    @field_validator("ranks")
    @classmethod
    def _rank_numbers(cls, v: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return rank_numbers(v, info.data.get("nodes"))

    @field_validator("end")
    @classmethod
    def _after_start(cls, v: datetime | None, info: ValidationInfo) -> datetime | None:
        return end_after_start(v, info.data.get("start"))

    def to_jobinfo(self) -> JobInfo:
        return to_jobinfo(self)
