from mldiag_provision.cli.app import main

raise SystemExit(main())
