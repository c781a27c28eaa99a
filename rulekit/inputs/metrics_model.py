"""`MetricRecord`: the pydantic model of a metric series' JSON / JSONL wire form
(`rulekit.inputs.metrics` describes it and re-exports the name); `to_series()`
gives the plain `MetricSeries`.  Imported on first use: only a job with metric
records, the Service and the Blueprint pay for pydantic.  Validates only.
"""
from __future__ import annotations

import math
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, field_validator

from rulekit.inputs.metrics import MAX_LABELS, MAX_SAMPLES, MetricSeries

Number = StrictInt | StrictFloat


class MetricRecord(BaseModel):
    """The wire form: {"kind": "metric", "node", "name", "labels", "samples": [[t, v], ...]}."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["metric"] = "metric"
    node: Optional[StrictStr] = Field(min_length=1, max_length=512)
    name: StrictStr = Field(min_length=1, max_length=512)
    labels: dict[StrictStr, StrictStr] = Field(default_factory=dict, max_length=MAX_LABELS)
    samples: list[tuple[Number, Number]] = Field(max_length=MAX_SAMPLES)

    @field_validator("samples")
    @classmethod
    def _finite(cls, v: list[tuple[float, float]]) -> list[tuple[float, float]]:
        for i, (t, x) in enumerate(v):
            try:
                ok = math.isfinite(float(t)) and math.isfinite(float(x))
            except OverflowError:
                ok = False
            if not ok:
                raise ValueError(f"sample {i} is not a pair of finite numbers")
        return v

    def to_series(self) -> MetricSeries:
        return MetricSeries.of(self.node, self.name, list(self.samples), self.labels)
