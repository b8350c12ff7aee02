"""Layer 4: the Textual screens (UI only; all file-system work goes through qconsole)."""
