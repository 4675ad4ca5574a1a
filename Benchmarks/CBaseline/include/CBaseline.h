int cbaseline_placeholder(void);
