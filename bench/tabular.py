"""Part 53 of `make bench` (bench/README.md): mltool's boosted trees against LightGBM, XGBoost and scikit-learn's
HistGradientBoosting on datasets/tabular.sh's tables (Fashion-MNIST's 784 pixels among them, the classic boosting speed
test), same train/validation/test files, 2 threads.

For each set and seed: test accuracy (classification) or RMSE (regression), training seconds (mltool: the whole
`mltool train` process, reading the CSV included; peers: the fit call on data already in memory) and prediction
rows/s on 10,000 rows: in memory for every learner (mltool: `mltool bench MODEL --rows` on a 10,000-row CSV, which
reads the table once and times predict alone; peers: predict on a DataFrame), and for mltool also the whole
`mltool predict` process on that CSV, reading and writing included. Peers run with their defaults, and LightGBM and
XGBoost also with early stopping on the validation file (1000 rounds at most, patience 20, as mltool). Then, once per
set (the fits are deterministic), `--learner linear` against scikit-learn's LogisticRegression(C=1) / Ridge(alpha=1)
after StandardScaler, a missing indicator and OneHotEncoder, on the training file alone as mltool's. Run alone:
python3 bench/tabular.py [--sets letter,spam] [--seeds 3] [--mltool .build/release/mltool] [--linear-only]
"""
import argparse, csv, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = {"letter": "lettr", "pima": "diabetes", "dna": "Class", "diamonds": "price", "spam": "type", "fashion": "label"}
THREADS = 2


def load(name):
    import pandas as pd
    d = os.path.join(ROOT, "datasets/tabular", name)
    parts = {p: pd.read_csv(os.path.join(d, p + ".csv"), keep_default_na=True) for p in ("train", "validation", "test")}
    target = SETS[name]
    regression = name == "diamonds"
    for df in parts.values():
        for c in df.columns:
            if c != target and not pd.api.types.is_numeric_dtype(df[c]):
                df[c] = df[c].astype("category")
    cats = {c: sorted(parts["train"][c].dropna().unique()) for c in parts["train"].columns
            if c != target and str(parts["train"][c].dtype) == "category"}
    for df in parts.values():
        for c, levels in cats.items():
            df[c] = pd.Categorical(df[c], categories=levels)
    labels = None if regression else sorted(parts["train"][target].astype(str).unique())
    out = {}
    for p, df in parts.items():
        x = df.drop(columns=[target])
        y = df[target].astype(float) if regression else df[target].astype(str).map({l: i for i, l in enumerate(labels)})
        out[p] = (x, y.to_numpy())
    return out, regression, labels


def score(regression, y, pred):
    import numpy as np
    if regression:
        return float(np.sqrt(np.mean((np.asarray(pred, dtype=float) - y) ** 2)))
    return float(np.mean(np.asarray(pred) == y))


def batch_of(x, n=10_000):
    import pandas as pd
    reps = -(-n // len(x))
    return pd.concat([x] * reps, ignore_index=True).iloc[:n]


def peers(data, regression, seed, linear=False):
    """(name, fit seconds, test score, rows/s on 10,000 rows) for each peer configuration (linear: the linear one)."""
    import numpy as np
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    (xtr, ytr), (xva, yva), (xte, yte) = data["train"], data["validation"], data["test"]
    big = batch_of(xte)
    out = []

    def measure(name, model, fit, predict):
        t = time.perf_counter(); fit(); fit_s = time.perf_counter() - t
        s = score(regression, yte, predict(xte))
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter(); predict(big); best = min(best, time.perf_counter() - t)
        out.append((name, fit_s, s, len(big) / best))

    if linear:
        m = linear_peer(regression)
        measure("sklearn " + ("Ridge" if regression else "LogisticRegression"), m, lambda: m.fit(xtr, ytr), m.predict)
        return out
    common = dict(n_jobs=THREADS, random_state=seed)
    lgb_cls = lgb.LGBMRegressor if regression else lgb.LGBMClassifier
    m = lgb_cls(verbose=-1, **common)
    measure("LightGBM defaults", m, lambda: m.fit(xtr, ytr), m.predict)
    m2 = lgb_cls(verbose=-1, n_estimators=1000, **common)
    measure("LightGBM early stopping", m2, lambda: m2.fit(xtr, ytr, eval_set=[(xva, yva)],
                                                          callbacks=[lgb.early_stopping(20, verbose=False)]), m2.predict)
    xgb_cls = xgb.XGBRegressor if regression else xgb.XGBClassifier
    m3 = xgb_cls(tree_method="hist", enable_categorical=True, **common)
    measure("XGBoost defaults", m3, lambda: m3.fit(xtr, ytr), m3.predict)
    m4 = xgb_cls(tree_method="hist", enable_categorical=True, n_estimators=1000, early_stopping_rounds=20, **common)
    measure("XGBoost early stopping", m4, lambda: m4.fit(xtr, ytr, eval_set=[(xva, yva)], verbose=False), m4.predict)
    hgb_cls = HistGradientBoostingRegressor if regression else HistGradientBoostingClassifier
    m5 = hgb_cls(categorical_features="from_dtype", random_state=seed)
    measure("sklearn HistGradientBoosting", m5, lambda: m5.fit(xtr, ytr), m5.predict)
    return out


def linear_peer(regression):
    """scikit-learn's linear model on mltool's linear columns: numbers standardised, a missing value 0 (the mean) with
    an indicator column, categories one-hot (an unseen one all zeros)."""
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    numbers = make_pipeline(StandardScaler(), SimpleImputer(strategy="constant", fill_value=0, add_indicator=True))
    prep = ColumnTransformer([("numbers", numbers, make_column_selector(dtype_include="number")),
                              ("categories", OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include="category"))])
    return make_pipeline(prep, Ridge(alpha=1.0) if regression else LogisticRegression(C=1.0, max_iter=5000))


def mltool(binary, name, seed, work, extra=()):
    """(train seconds, test score, predict rows/s on 10,000 rows in memory and as a whole process) of mltool's
    defaults (and `extra` options)."""
    d = os.path.join(ROOT, "datasets/tabular", name)
    model = os.path.join(work, f"{name}-{seed}.bin")
    t = time.perf_counter()
    r = subprocess.run([binary, "train", f"{d}/train.csv", "--target", SETS[name], "--test", f"{d}/test.csv",
                        "--validation-data", f"{d}/validation.csv", "--seed", str(seed), "--threads", str(THREADS),
                        "-o", model, "--quiet", *extra], capture_output=True, text=True)
    train_s = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: mltool train {name} exited {r.returncode}\n{r.stderr[-2000:]}")
    ev = subprocess.run([binary, "eval", model, f"{d}/test.csv", "--json"], capture_output=True, text=True, check=True)
    report = json.loads(ev.stdout)
    s = report["regression"]["rmse"] if report.get("regression") else report["classification"]["accuracy"]
    rows = list(csv.reader(open(f"{d}/test.csv")))
    big = os.path.join(work, f"{name}-10000.csv")
    with open(big, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(rows[0])
        for i in range(10_000):
            w.writerow(rows[1 + i % (len(rows) - 1)])
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([binary, "predict", model, big], capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    b = subprocess.run([binary, "bench", model, "--rows", big, "--seconds", "2", "--json"], capture_output=True, text=True,
                       check=True)
    return train_s, s, json.loads(b.stdout)["rows_per_second"], 10_000 / best


def measure(binary, sets, seeds, report=print, linear_only=False):
    """Rows of dicts: set, seed, who, train seconds, score, rows/s; `report` sees each as it is made."""
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in sets:
            data, regression, _ = load(name)
            metric = "RMSE" if regression else "accuracy"
            t, s, rps, process_rps = mltool(binary, name, 0, work, extra=("--learner", "linear"))
            mine = dict(set=name, seed=0, who="mltool --learner linear", train_s=t, score=s, metric=metric, rows_per_s=rps,
                        process_rows_per_s=process_rps)
            rows.append(mine); report(mine)
            for who, ft, ps, prs in peers(data, regression, 0, linear=True):
                r = dict(set=name, seed=0, who=who, train_s=ft, score=ps, metric=metric, rows_per_s=prs)
                rows.append(r); report(r)
            for seed in range(0 if linear_only else seeds):
                t, s, rps, process_rps = mltool(binary, name, seed, work)
                mine = dict(set=name, seed=seed, who="mltool", train_s=t, score=s, metric=metric, rows_per_s=rps,
                            process_rows_per_s=process_rps)
                rows.append(mine); report(mine)
                for who, ft, ps, prs in peers(data, regression, seed):
                    r = dict(set=name, seed=seed, who=who, train_s=ft, score=ps, metric=metric, rows_per_s=prs)
                    rows.append(r); report(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mltool", default=os.path.join(ROOT, ".build/release/mltool"))
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--linear-only", action="store_true", help="only the linear models")
    a = ap.parse_args()
    measure(a.mltool, a.sets.split(","), a.seeds, linear_only=a.linear_only,
            report=lambda r: print(f"{r['set']:<9} seed {r['seed']}  {r['who']:<30} {r['metric']} {r['score']:.4f}  "
                                   f"train {r['train_s']:.2f} s  predict {r['rows_per_s']:.0f} rows/s"
                                   + (f" (whole process {r['process_rows_per_s']:.0f})" if "process_rows_per_s" in r else ""),
                                   flush=True))


if __name__ == "__main__":
    main()
