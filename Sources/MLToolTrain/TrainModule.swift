// MLToolTrain: logistic-regression / max-entropy solvers.
