"""Turning scored hits into ranked passage rows, and fusing rankings."""
