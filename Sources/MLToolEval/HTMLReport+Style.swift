extension HTMLReport {
    /// The page's only style sheet: system fonts, no external resources.
    static let css = """
    :root { --ink: #1d232c; --muted: #5f6b7a; --line: #e3e6eb; --bg: #f4f5f7; --accent: #3b6fb6; }
    * { box-sizing: border-box; }
    body { margin: 0; background: var(--bg); color: var(--ink);
      font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", sans-serif; }
    main { max-width: 1120px; margin: 0 auto; padding: 24px 20px 40px; }
    header h1 { margin: 0 0 2px; font-size: 26px; letter-spacing: -0.01em; }
    .lede { margin: 0 0 18px; color: var(--muted); }
    section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 20px 18px; margin: 0 0 16px; }
    h2 { margin: 0 0 10px; font-size: 17px; }
    h3 { margin: 0 0 6px; font-size: 14px; color: var(--muted); font-weight: 600; }
    .note { margin: 0 0 10px; color: var(--muted); font-size: 13px; }
    .pair { display: flex; flex-wrap: wrap; gap: 0 16px; }
    .pair > section { flex: 1 1 460px; min-width: 0; }
    .row { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
    .scroll { overflow-x: auto; max-width: 100%; }
    table.facts { border-collapse: collapse; min-width: 320px; flex: 1; }
    table.facts caption { text-align: left; font-weight: 600; padding-bottom: 4px; }
    table.facts th { text-align: left; font-weight: 500; color: var(--muted); padding: 3px 16px 3px 0; vertical-align: top; white-space: nowrap; width: 1%; }
    table.facts td { padding: 3px 0; overflow-wrap: anywhere; }
    table.facts tr + tr > * { border-top: 1px solid var(--line); }
    .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; }
    .card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fbfcfd; }
    .card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; }
    .card .v { font-size: 28px; font-weight: 650; font-variant-numeric: tabular-nums; margin: 2px 0; }
    .card .n { color: var(--muted); font-size: 12px; }
    table.compare { border-collapse: collapse; margin-bottom: 14px; font-variant-numeric: tabular-nums; }
    table.compare th, table.compare td { padding: 5px 14px; border-bottom: 1px solid var(--line); text-align: right; }
    table.compare th:first-child { text-align: left; font-weight: 500; color: var(--muted); }
    table.compare tr:first-child th { color: var(--muted); font-weight: 600; }
    .up { color: #1f7a3a; } .down { color: #b3261e; }
    svg { display: block; max-width: 100%; height: auto; fill: var(--ink); font-family: inherit; }
    svg .muted { fill: var(--muted); }
    svg .axis { fill: var(--muted); font-weight: 600; font-size: 12px; }
    svg rect.cell { stroke: #fff; stroke-width: 1; }
    .swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; vertical-align: -1px; }
    .swatch.diag { background: #2d5ea3; } .swatch.off { background: #d9632a; }
    .mistakes { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 12px; }
    figure.mistake { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px; background: #fbfcfd; }
    .thumb { width: 96px; height: 96px; margin: 0 auto 8px; display: flex; align-items: center; justify-content: center;
      background: #fff; border: 1px solid var(--line); border-radius: 4px; }
    .thumb img { width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated; }
    .thumb.empty { color: var(--muted); font-size: 12px; }
    blockquote.snippet { margin: 0 0 8px; padding: 6px 8px; border-left: 3px solid var(--line); background: #fff;
      font-size: 12px; color: var(--ink); overflow-wrap: anywhere; }
    figcaption { font-size: 12.5px; }
    figcaption div { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    figcaption .tag { display: inline-block; min-width: 34px; color: var(--muted); font-size: 11px; }
    figcaption .pred b { color: #b3261e; }
    figcaption .truth b { color: #1f7a3a; }
    figcaption .conf { color: var(--muted); font-size: 11px; margin-top: 2px; }
    figcaption .conf b { color: var(--ink); font-size: 12px; font-weight: 600; font-variant-numeric: tabular-nums; }
    footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 8px; }

    """
}
