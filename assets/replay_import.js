/* /replay's import panel: the chosen file goes to the API's POST /api/v1/incidents/import as it is
   (a bundle can be far larger than a Dash callback's body), with the session's CSRF token; the answer
   (the stored incident, or the one-line refusal) is written beside the button. */
(function () {
    var PREFIX = 'replay-import-';
    var chosen = null;  // the File picked with "choose a file…" (Dash renders no file input, so one is made here)

    function choose() {
        var input = document.createElement('input');
        input.type = 'file';
        input.accept = '.ctincident,.csv,.xml,.txt,.log,.zip';
        input.style.display = 'none';
        input.addEventListener('change', function () {
            chosen = input.files[0] || null;
            document.getElementById(PREFIX + 'file').textContent = chosen ? chosen.name : 'no file chosen';
            input.remove();
        });
        document.body.appendChild(input);
        input.click();
    }

    function cookie(name) {
        var hit = document.cookie.split('; ').find(function (c) { return c.indexOf(name + '=') === 0; });
        return hit ? decodeURIComponent(hit.slice(name.length + 1)) : '';
    }

    function basePath() {
        var config = document.getElementById('_dash-config');
        try {
            return (JSON.parse(config.textContent).requests_pathname_prefix || '/').replace(/\/$/, '');
        } catch (e) {
            return '';
        }
    }

    function say(text, ok, href) {
        var out = document.getElementById(PREFIX + 'result');
        out.textContent = text;
        out.className = 'replay-import-result ' + (ok ? 'ok' : 'view-error');
        if (href) {
            var link = document.createElement('a');
            link.href = href;
            link.textContent = ' open it →';
            out.appendChild(link);
        }
    }

    document.addEventListener('click', function (event) {
        var picker = event.target.closest && event.target.closest('#' + PREFIX + 'choose');
        if (picker && !picker.disabled) { choose(); return; }
        var button = event.target.closest && event.target.closest('#' + PREFIX + 'button');
        if (!button || button.disabled) { return; }
        var file = chosen;
        if (!file) { say('choose a file first', false); return; }
        var params = new URLSearchParams({ format: document.getElementById(PREFIX + 'format').value });
        var name = document.getElementById(PREFIX + 'name').value.trim();
        if (name) { params.set('name', name); }
        button.disabled = true;
        say('importing ' + file.name + ' …', true);
        fetch(basePath() + '/api/v1/incidents/import?' + params.toString(), {
            method: 'POST',
            body: file,
            credentials: 'same-origin',
            headers: { 'Content-Type': 'application/octet-stream', 'X-CSRFToken': cookie('_csrf_token') },
        }).then(function (response) {
            return response.json().then(function (body) { return { ok: response.ok, body: body }; });
        }).then(function (answer) {
            if (answer.ok) {
                var key = 'replay:' + answer.body.name + '@' + answer.body.start.replace('+00:00', 'Z');
                say('imported ' + answer.body.name, true, basePath() + '/replay?view=' + encodeURIComponent(key));
            } else {
                say('refused: ' + (answer.body.error || 'the server gave no reason'), false);
            }
        }).catch(function (error) {
            say('the upload failed: ' + error, false);
        }).finally(function () {
            button.disabled = false;
        });
    });
})();
