// placeholder until this stage lands
