"""Formats: accuracy, consistency, worst case and spread of a choice benchmark under other option
orders, label sets and "choose the incorrect option" (params ``formats``), beside the typo effect."""
