"""Every component id of the dashboard, in one module.

One class per page (or shell part) holds plain string ids; repeated widgets use dict
ids built by the functions below and matched with ``MATCH``/``ALL`` in callbacks.
Ids are prefixed with the page name so two pages never collide.

To add a page: append a class at the END of this file (pages are added in parallel,
appending keeps merges trivial).
"""

from __future__ import annotations


class Shell:
    """The frame around every page: header, navigation, data ages, the live tick."""

    HEADER = "shell-header"
    SITE_NAME = "shell-site-name"
    NAV = "shell-nav"
    SOURCE_AGES = "shell-source-ages"
    CLOCK = "shell-clock"
    TICK = "shell-tick"  # dcc.Interval driving every live page
    LOCATION = "shell-location"  # read-only view of the browser URL
    SCREEN = "shell-screen"  # dcc.Store: the page path and view parameters on screen, set from the URL
    MAIN = "shell-main"  # the page slot; class "is-stale"/"is-dead" greys it out
    VIEW_BANNER = "shell-view-banner"  # under the header: which scenario/replay view is on screen
    VIEW_ERROR = "shell-view-error"  # the message of a page whose view cannot be shown
    LINK_KEEPER = "shell-link-keeper"  # dcc.Store written by the clientside link handler (never read)


# Pattern-matching id types (dict ids); use the helper functions below.
KPI_VALUE = "kpi-value"
NAV_LINK = "nav-link"
ALERT_ACK = "alert-ack"
ALERT_SILENCE = "alert-silence"
ALERT_UNSILENCE = "alert-unsilence"


def kpi_value(page: str, name: str) -> dict:
    """Id of the value text of KPI card ``name`` on ``page``."""
    return {"type": KPI_VALUE, "page": page, "name": name}


def kpi_note(page: str, name: str) -> dict:
    """Id of the note under the value of KPI card ``name`` on ``page``."""
    return {"type": "kpi-note", "page": page, "name": name}


def kpi_spark(page: str, name: str) -> dict:
    """Id of the sparkline of KPI card ``name`` on ``page``."""
    return {"type": "kpi-spark", "page": page, "name": name}


def nav_link(path: str) -> dict:
    """Id of the navigation link to ``path``."""
    return {"type": NAV_LINK, "path": path}


def alert_ack(alert_id: str) -> dict:
    """Id of the acknowledge button of one alert."""
    return {"type": ALERT_ACK, "alert": alert_id}


def alert_silence(alert_id: str) -> dict:
    """Id of the silence button of one alert."""
    return {"type": ALERT_SILENCE, "alert": alert_id}


def alert_unsilence(alert_id: str) -> dict:
    """Id of the button that lifts one alert's silence."""
    return {"type": ALERT_UNSILENCE, "alert": alert_id}


def alert_comment(alert_id: str) -> dict:
    """Id of the acknowledgement comment input of one alert."""
    return {"type": "alert-comment", "alert": alert_id}


def alert_silence_for(alert_id: str) -> dict:
    """Id of the silence-duration choice of one alert."""
    return {"type": "alert-silence-for", "alert": alert_id}


class Overview:
    """``/``: site summary."""

    PAGE = "overview"
    SELECTION = "overview-selection"  # dcc.Store {"window": seconds, "at": ISO time or None}, mirrored into the URL
    URL_SYNC = "overview-url-sync"
    WINDOW = "overview-window"
    KPIS = "overview-kpis"
    POWER_TREND = "overview-power-trend"
    PUE_TREND = "overview-pue-trend"
    TEMP_TREND = "overview-temp-trend"
    THROUGHPUT_TREND = "overview-throughput-trend"
    GPU_TREND = "overview-gpu-trend"
    MFU_TREND = "overview-mfu-trend"
    PINNED = "overview-pinned"  # dcc.Store: the pinned instant (UTC string) or None
    TRENDS_LIVE = "overview-trends-live"  # dcc.Store relaying the live trend patches (dashboard.callbacks.patch_relay)
    TRENDS_PIN = "overview-trends-pin"  # dcc.Store relaying the pinned-time line patches
    PIN_LABEL = "overview-pin-label"
    PIN_CLEAR = "overview-pin-clear"
    HOT_RACKS = "overview-hot-racks"
    OPEN_ALERTS = "overview-open-alerts"
    JOBS = "overview-jobs"
    STATUS = "overview-status"  # the status banner: worst cause, scope, job impact
    BREAKDOWN = "overview-breakdown"  # facility = IT + network + losses + cooling + site


class Floor:
    """``/floor``: hall floor plans and the rack drill-down."""

    PAGE = "floor"
    URL = "floor-url"
    METRIC = "floor-metric"
    HALLS = "floor-halls"
    HALLS_LIVE = (
        "floor-halls-live"  # dcc.Store relaying the live patches of the halls (dashboard.callbacks.patch_relay)
    )
    HALLS_SELECTION = "floor-halls-selection"  # dcc.Store relaying the selection outline patches
    SELECTED_RACK = "floor-selected-rack"  # dcc.Store with the rack name
    JOB = "floor-job"  # dcc.Store with the job outlined (?job=), or None
    JOB_NOTE = "floor-job-note"
    RACK_PANEL = "floor-rack-panel"
    RACK_TITLE = "floor-rack-title"
    RACK_SUMMARY = "floor-rack-summary"
    RACK_CLOSE = "floor-rack-close"
    RACK_ELEVATION = "floor-rack-elevation"
    RACK_GPU_TEMP = "floor-rack-gpu-temp"
    RACK_GPU_POWER = "floor-rack-gpu-power"
    RACK_GPU_CLOCK = "floor-rack-gpu-clock"
    RACK_XIDS = "floor-rack-xids"
    RACK_CDU = "floor-rack-cdu"
    RACK_FEEDS = "floor-rack-feeds"
    RACK_FABRIC = "floor-rack-fabric"
    RACK_HISTORY = "floor-rack-history"
    RACK_HTML = "floor-rack-html"  # dcc.Store: HTML of the static drill-down parts, keyed by container id
    COMPARE_HALLS = "floor-compare-halls"  # compare mode: the other view's floor
    RACK_SCROLLED = "floor-rack-scrolled"  # dcc.Store: the rack whose panel was last scrolled into view
    RACK_WHATIF = "floor-rack-whatif"  # link: the rack in the what-if editor


class Alerts:
    """``/alerts``: active and past alerts, acknowledge and silence."""

    PAGE = "alerts"
    URL = "alerts-url"
    SEVERITY = "alerts-severity"
    SHOW_CLEARED = "alerts-show-cleared"
    ACTIVE_TABLE = "alerts-active-table"
    PAST_TABLE = "alerts-past-table"
    SUMMARY = "alerts-summary"
    ACTION_RESULT = "alerts-action-result"
    SIGNATURE = "alerts-signature"  # dcc.Store: what the tables show, to skip unchanged re-renders


# --- pages added by other areas: append classes below this line -------------------


class Cooling:
    """``/cooling``: plant → loops → CDUs, CDU capacity use, time to throttle."""

    PAGE = "cooling"
    SELECTION = "cooling-selection"  # dcc.Store {"loop": int | None}
    RENDERED = "cooling-rendered"  # dcc.Store: timestamp of the snapshot on screen
    FIGURES = "cooling-figures"  # dcc.Store relaying the live figures and patches (dashboard.callbacks.patch_relay)
    URL_SYNC = "cooling-url-sync"
    LOOP = "cooling-loop"  # dropdown: site or one loop
    WHATIF = "cooling-whatif"  # link: the chosen loop's blast radius in the what-if editor
    FLOW = "cooling-flow"
    USE_HIST = "cooling-use-hist"
    WORST = "cooling-worst"
    TTT = "cooling-ttt"
    TTT_TABLE = "cooling-ttt-table"
    KPIS = "cooling-kpis"


class Cdu:
    """``/cdu``: one CDU — its state, flow, temperatures and pumps over time, its racks and alerts."""

    PAGE = "cdu"
    KPIS = "cdu-kpis"
    STATUS = "cdu-status"
    TEMPS = "cdu-temps"
    FLOW = "cdu-flow"
    HEAT = "cdu-heat"
    RACKS = "cdu-racks"
    ALERTS = "cdu-alerts"


class Power:
    """``/power``: one-line diagram, load and N-1 headroom, generation, swing."""

    PAGE = "power"
    SELECTION = "power-selection"  # dcc.Store {"element": int | None, "metric": str}
    RENDERED = "power-rendered"
    FIGURES = "power-figures"  # dcc.Store relaying the live figures and patches (dashboard.callbacks.patch_relay)
    URL_SYNC = "power-url-sync"
    METRIC = "power-metric"
    RESET = "power-reset"
    SCOPE = "power-scope"
    WHATIF = "power-whatif"  # link: the focused element's blast radius in the what-if editor
    TREE = "power-tree"
    HEADROOM = "power-headroom"
    WORST = "power-worst"
    GENERATION = "power-generation"
    SWING = "power-swing"
    SUPPLY_TREND = "power-supply-trend"
    SOURCES = "power-sources"  # the table of generation sources (?source= focuses one)
    KPIS = "power-kpis"


class Fabric:
    """``/fabric``: switch matrices per tier, one switch's ports, job bandwidth."""

    PAGE = "fabric"
    SELECTION = "fabric-selection"  # dcc.Store {"tier": int, "switch": int | None}
    RENDERED = "fabric-rendered"
    FIGURES = "fabric-figures"  # dcc.Store relaying the live figures and patches (dashboard.callbacks.patch_relay)
    URL_SYNC = "fabric-url-sync"
    TIER = "fabric-tier"
    MATRIX = "fabric-matrix"
    DETAIL = "fabric-detail"
    DETAIL_PANEL = "fabric-detail-panel"
    DETAIL_EMPTY = "fabric-detail-empty"
    TIERS = "fabric-tiers"
    UTIL_HIST = "fabric-util-hist"
    KPIS = "fabric-kpis"


class Jobs:
    """``/jobs``: job placement, step-time breakdown, bottleneck racks."""

    PAGE = "jobs"
    SELECTION = "jobs-selection"  # dcc.Store {"job": str | None, "rack": int | None}
    RENDERED = "jobs-rendered"
    FIGURES = "jobs-figures"  # dcc.Store relaying the live figures and patches (dashboard.callbacks.patch_relay)
    URL_SYNC = "jobs-url-sync"
    JOB = "jobs-job"
    PLACEMENT = "jobs-placement"
    BREAKDOWN = "jobs-breakdown"
    BOTTLENECKS = "jobs-bottlenecks"
    KPIS = "jobs-kpis"
    DIAGNOSIS = "jobs-diagnosis"  # causes, hosts to drain, throughput after draining
    THROUGHPUT = "jobs-throughput"  # throughput trend
    TIMELINE = "jobs-timeline"  # the job's failures, restarts and checkpoints
    FLEET = "jobs-fleet"  # the fleet section (dashboard.components.fleet_panel)
    FLEET_KPIS = "jobs-fleet-kpis"
    FLEET_TABLE = "jobs-fleet-table"  # running and pending jobs, paged on the server
    FLEET_STATE = "jobs-fleet-state"  # all | running | pending
    FLEET_SEARCH = "jobs-fleet-search"
    FLEET_COUNT = "jobs-fleet-count"
    FLEET_TEAMS = "jobs-fleet-teams"
    FLEET_TEAMS_TABLE = "jobs-fleet-teams-table"
    FLEET_USAGE = "jobs-fleet-usage"  # GPUs by team over time
    FLEET_FRAG = "jobs-fleet-frag"  # nodes by free GPUs
    FLEET_TOPOLOGY = "jobs-fleet-topology"  # leaf groups or NVLink blocks by occupancy
    FLEET_LANE = "jobs-fleet-lane"  # the timeline's lanes: pod | hall
    FLEET_GANTT = "jobs-fleet-gantt"  # allocations by pod or hall
    FLEET_WHATIF = "jobs-fleet-whatif"  # the place of the fleet what-if
    FLEET_FIGURES_KEY = "jobs-fleet-figures-key"  # what the fleet figures in the browser show


COOLING_FLOW_GRAPH = "cooling-flow-graph"


def cooling_flow_graph(scope: str) -> dict:
    """Id of the cooling heat-flow diagram for ``scope`` (site or a loop name).

    A new scope gets a new graph: plotly's Sankey keeps stale node positions when a
    figure with other nodes is swapped in place.
    """
    return {"type": COOLING_FLOW_GRAPH, "scope": scope}


class Replay:
    """``/replay``: the incident library, the timeline of one incident, twin versus recorded."""

    PAGE = "replay"
    SEARCH = "replay-search"
    SELECTED = "replay-selected"  # dcc.Store: the incident on screen (None: none)
    HITS = "replay-hits"  # the jobs and teams the incident hit
    HITS_SUMMARY = "replay-hits-summary"
    LIBRARY = "replay-library"
    TIMELINE = "replay-timeline"
    SLIDER = "replay-slider"
    PLAY = "replay-play"
    SPEED = "replay-speed"
    NEXT_EVENT = "replay-next-event"
    INTERVAL = "replay-interval"
    INSTANT = "replay-instant"  # the time shown, as text
    MOMENT = "replay-moment"  # the recorded values of the instant
    FRAMES = "replay-frames"  # dcc.Store: incident name, frame times, event frame indices
    CLOCK = "replay-clock"  # dcc.Store: the play clock (client side)
    URL_SYNC = "replay-url-sync"  # dcc.Store: the view key written into the URL
    RUN_TWIN = "replay-run-twin"
    TWIN = "replay-twin"
    CALIBRATE = "replay-calibrate"  # fit on the first half, save the site as a new version
    CALIBRATION = "replay-calibration"
    IMPORT_CHOOSE = "replay-import-choose"  # the import panel (assets/replay_import.js posts the file to the API)
    IMPORT_FILE = "replay-import-file"  # the chosen file's name
    IMPORT_FORMAT = "replay-import-format"
    IMPORT_NAME = "replay-import-name"
    IMPORT_BUTTON = "replay-import-button"
    IMPORT_RESULT = "replay-import-result"


class Audit:
    """``/audit`` (admins only): the audit log with filters by user, action and time."""

    PAGE = "audit"
    USER = "audit-user"
    ACTION = "audit-action"
    WINDOW = "audit-window"
    TABLE = "audit-table"
    COUNT = "audit-count"


class WhatIf:
    """``/whatif``: the scenario editor, its comparison with the baseline, and the blast radius."""

    PAGE = "whatif"
    URL = "whatif-url"
    REVISION = "whatif-revision"  # dcc.Store {"scenario": name, "n": counter}: bumped by every stored change
    SELECTED = "whatif-selected"  # dcc.Store: names of the selected racks
    BLAST_RACKS = "whatif-blast-racks"  # dcc.Store: racks of the last blast radius shown on the floor
    # scenario bar
    SCENARIO = "whatif-scenario"
    NAME = "whatif-name"
    NEW = "whatif-new"
    RENAME = "whatif-rename"
    DUPLICATE = "whatif-duplicate"
    DELETE = "whatif-delete"
    UNDO = "whatif-undo"
    REDO = "whatif-redo"
    EXPORT = "whatif-export"
    DOWNLOAD = "whatif-download"
    IMPORT = "whatif-import"
    SCENARIO_MSG = "whatif-scenario-msg"
    EDIT_LIST = "whatif-edit-list"
    STORE_NOTE = "whatif-store-note"
    # selection
    FLOOR = "whatif-floor"
    FLOOR_METRIC = "whatif-floor-metric"
    FLOOR_SIGNATURE = "whatif-floor-signature"  # dcc.Store: layout and metric of the drawn floor (else patched)
    HALL = "whatif-hall"
    ROW = "whatif-row"
    PATTERN = "whatif-pattern"
    SELECT = "whatif-select"
    CLEAR = "whatif-clear"
    SELECTION_TEXT = "whatif-selection-text"
    # rack edits (each control has its message beside it: ids.whatif_msg(control))
    TYPE = "whatif-type"
    APPLY_TYPE = "whatif-apply-type"
    MOVE_X = "whatif-move-x"
    MOVE_Y = "whatif-move-y"
    APPLY_MOVE = "whatif-apply-move"
    APPLY_REMOVE = "whatif-apply-remove"
    FEED_A = "whatif-feed-a"
    FEED_B = "whatif-feed-b"
    APPLY_FEEDS = "whatif-apply-feeds"
    CDU = "whatif-cdu"
    LOOP = "whatif-loop"
    APPLY_CDU = "whatif-apply-cdu"
    DESIGN_LIMITS = "whatif-design-limits"  # warn: exceeded ratings listed; strict: refused
    CAP_SCOPE = "whatif-cap-scope"
    CAP_W = "whatif-cap-w"
    APPLY_CAP = "whatif-apply-cap"
    # elements and conditions
    FAIL_KIND = "whatif-fail-kind"
    FAIL_ELEMENT = "whatif-fail-element"
    APPLY_FAIL = "whatif-apply-fail"
    APPLY_RESTORE = "whatif-apply-restore"
    SETPOINT_TARGET = "whatif-setpoint-target"
    SETPOINT_ELEMENT = "whatif-setpoint-element"
    SETPOINT_C = "whatif-setpoint-c"
    APPLY_SETPOINT = "whatif-apply-setpoint"
    DRY_BULB = "whatif-dry-bulb"
    WET_BULB = "whatif-wet-bulb"
    APPLY_WEATHER = "whatif-apply-weather"
    JOB = "whatif-job"
    APPLY_JOB = "whatif-apply-job"
    # answer
    COMPARISON = "whatif-comparison"
    COMPARISON_HTML = "whatif-comparison-html"  # dcc.Store: the comparison as static markup (set clientside)
    ELAPSED = "whatif-elapsed"  # server time of the last projection, for the benchmark
    BLAST_KIND = "whatif-blast-kind"
    BLAST_ELEMENT = "whatif-blast-element"
    BLAST_RUN = "whatif-blast-run"
    BLAST_RESULT = "whatif-blast-result"
    BLAST_SHOW = "whatif-blast-show"


def whatif_msg(control: str) -> str:
    """Id of the message shown next to what-if control ``control`` (an apply button's id)."""
    return f"{control}-msg"


class AlertMutes:
    """``/alerts``: the panel of scoped silences and maintenance windows."""

    PANEL = "alert-mutes-panel"
    KIND = "alert-mutes-kind"  # silence | maintenance
    SCOPE_KIND = "alert-mutes-scope-kind"  # entity | group | hall
    SCOPE_VALUE = "alert-mutes-scope-value"
    RULE = "alert-mutes-rule"
    START = "alert-mutes-start"  # a window's start (UTC, datetime-local); blank: now
    DURATION = "alert-mutes-duration"
    COMMENT = "alert-mutes-comment"
    ADD = "alert-mutes-add"
    RESULT = "alert-mutes-result"
    LIST = "alert-mutes-list"


MUTE_END = "alert-mute-end"  # pattern-matching type of the expire / cancel button of one silence or window


def mute_end(mute_id: int) -> dict:
    """Id of the button that expires a silence or cancels a window."""
    return {"type": MUTE_END, "mute": mute_id}
