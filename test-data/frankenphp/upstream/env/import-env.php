<?php

return $_ENV['custom_key'];
