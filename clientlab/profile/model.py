"""The layers of a cell's CPU: the typed cell record's `Layers` and `LayerShare`
(clientlab/record.py), which the cell's figures carry as `layers`."""

from clientlab.record import LAYERS, Layers, LayerShare

__all__ = ["LAYERS", "LayerShare", "Layers"]
