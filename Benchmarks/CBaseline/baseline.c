int cbaseline_placeholder(void) { return 0; }
