<?php
// One UserCache store and one hit and one miss per request.
UserCache\Cache::store('k' . ($_GET['i'] ?? 0), [1, 2, 3]);
UserCache\Cache::fetch('k' . ($_GET['i'] ?? 0));
UserCache\Cache::fetch('absent');
echo "cache\n";
