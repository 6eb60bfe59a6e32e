-- A database written by CYOA before schema migrations existed (schema version 1),
-- by tests/study_builder.py at commit b17cc6a: two writers' whole sessions.
PRAGMA user_version = 1;
BEGIN TRANSACTION;
CREATE TABLE "choices" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "round" INTEGER,
   "event_seq" INTEGER,
   "slot" INTEGER,
   "system" TEXT,
   "is_switch" INTEGER,
   "chosen_at" TEXT,
   PRIMARY KEY ("session_id", "event_seq")
);
INSERT INTO "choices" VALUES('ec2ffc1b6c461a16',1,5,1,'alpha',0,'2026-11-25T04:28:08.589Z');
INSERT INTO "choices" VALUES('ec2ffc1b6c461a16',2,10,2,'alpha',0,'2026-11-25T04:28:08.595Z');
INSERT INTO "choices" VALUES('ec2ffc1b6c461a16',3,15,1,'alpha',0,'2026-11-25T04:28:08.597Z');
INSERT INTO "choices" VALUES('ec2ffc1b6c461a16',4,20,2,'alpha',0,'2026-11-25T04:28:08.598Z');
INSERT INTO "choices" VALUES('ec2ffc1b6c461a16',5,25,1,'alpha',0,'2026-11-25T04:28:08.602Z');
INSERT INTO "choices" VALUES('fe2bf33380869afe',1,5,1,'alpha',0,'2026-11-25T04:28:08.608Z');
INSERT INTO "choices" VALUES('fe2bf33380869afe',2,10,2,'alpha',0,'2026-11-25T04:28:08.610Z');
INSERT INTO "choices" VALUES('fe2bf33380869afe',3,15,1,'alpha',0,'2026-11-25T04:28:08.616Z');
INSERT INTO "choices" VALUES('fe2bf33380869afe',4,20,2,'alpha',0,'2026-11-25T04:28:08.617Z');
INSERT INTO "choices" VALUES('fe2bf33380869afe',5,25,1,'alpha',0,'2026-11-25T04:28:08.624Z');
CREATE TABLE "evaluation_details" (
   "experiment_id" TEXT PRIMARY KEY REFERENCES "experiments"("id"),
   "pay" TEXT,
   "qualifications" TEXT,
   "updated_at" TEXT,
   "updated_by" TEXT
);
CREATE TABLE "events" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "seq" INTEGER,
   "type" TEXT NOT NULL,
   "payload" TEXT NOT NULL,
   "server_time" TEXT NOT NULL,
   "client_action_id" TEXT,
   PRIMARY KEY ("session_id", "seq")
);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',1,'session_started','{"experiment": "exp", "limits": {}, "systems": ["alpha", "beta"]}','2026-11-25T04:28:08.586Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',2,'line_submitted','{"round": 1, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w1 line 1."}','2026-11-25T04:28:08.587Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',3,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 1.", "round": 1, "slot": 1, "system": "alpha", "text": "First says 1."}','2026-11-25T04:28:08.588Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',4,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 1.", "round": 1, "slot": 2, "system": "beta", "text": "Second says 1."}','2026-11-25T04:28:08.588Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',5,'suggestion_chosen','{"round": 1, "slot": 1, "switch": false}','2026-11-25T04:28:08.589Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',6,'turn_submitted','{"round": 1, "slot": 1, "text": "First says 1, edited."}','2026-11-25T04:28:08.589Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',7,'line_submitted','{"round": 2, "seeds": [1, 2], "slot_models": ["m-beta", "m-alpha"], "slot_systems": ["beta", "alpha"], "text": "w1 line 2."}','2026-11-25T04:28:08.590Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',8,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 2.", "round": 2, "slot": 1, "system": "beta", "text": "Second says 2."}','2026-11-25T04:28:08.590Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',9,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 2.", "round": 2, "slot": 2, "system": "alpha", "text": "First says 2."}','2026-11-25T04:28:08.590Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',10,'suggestion_chosen','{"round": 2, "slot": 2, "switch": false}','2026-11-25T04:28:08.595Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',11,'turn_submitted','{"round": 2, "slot": 2, "text": "First says 2, edited."}','2026-11-25T04:28:08.595Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',12,'line_submitted','{"round": 3, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w1 line 3."}','2026-11-25T04:28:08.596Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',13,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 3.", "round": 3, "slot": 1, "system": "alpha", "text": "First says 3."}','2026-11-25T04:28:08.596Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',14,'suggestion_failed','{"attempt": 1, "error": "timeout", "model": "m-beta", "one_suggestion_only": 1, "round": 3, "slot": 2, "system": "beta"}','2026-11-25T04:28:08.596Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',15,'suggestion_chosen','{"round": 3, "slot": 1, "switch": false}','2026-11-25T04:28:08.597Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',16,'turn_submitted','{"round": 3, "slot": 1, "text": "First says 3, edited."}','2026-11-25T04:28:08.597Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',17,'line_submitted','{"round": 4, "seeds": [1, 2], "slot_models": ["m-beta", "m-alpha"], "slot_systems": ["beta", "alpha"], "text": "w1 line 4."}','2026-11-25T04:28:08.597Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',18,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 4.", "round": 4, "slot": 1, "system": "beta", "text": "Second says 4."}','2026-11-25T04:28:08.598Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',19,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 4.", "round": 4, "slot": 2, "system": "alpha", "text": "First says 4."}','2026-11-25T04:28:08.598Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',20,'suggestion_chosen','{"round": 4, "slot": 2, "switch": false}','2026-11-25T04:28:08.598Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',21,'turn_submitted','{"round": 4, "slot": 2, "text": "First says 4, edited."}','2026-11-25T04:28:08.600Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',22,'line_submitted','{"round": 5, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w1 line 5."}','2026-11-25T04:28:08.601Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',23,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 5.", "round": 5, "slot": 1, "system": "alpha", "text": "First says 5."}','2026-11-25T04:28:08.601Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',24,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 5.", "round": 5, "slot": 2, "system": "beta", "text": "Second says 5."}','2026-11-25T04:28:08.601Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',25,'suggestion_chosen','{"round": 5, "slot": 1, "switch": false}','2026-11-25T04:28:08.602Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',26,'turn_submitted','{"round": 5, "slot": 1, "text": "First says 5, edited."}','2026-11-25T04:28:08.602Z',NULL);
INSERT INTO "events" VALUES('ec2ffc1b6c461a16',27,'survey_submitted','{"happy": 4}','2026-11-25T04:28:08.602Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',1,'session_started','{"experiment": "exp", "limits": {}, "systems": ["alpha", "beta"]}','2026-11-25T04:28:08.604Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',2,'line_submitted','{"round": 1, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w2 line 1."}','2026-11-25T04:28:08.607Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',3,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 1.", "round": 1, "slot": 1, "system": "alpha", "text": "First says 1."}','2026-11-25T04:28:08.607Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',4,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 1.", "round": 1, "slot": 2, "system": "beta", "text": "Second says 1."}','2026-11-25T04:28:08.607Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',5,'suggestion_chosen','{"round": 1, "slot": 1, "switch": false}','2026-11-25T04:28:08.608Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',6,'turn_submitted','{"round": 1, "slot": 1, "text": "First says 1, edited."}','2026-11-25T04:28:08.608Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',7,'line_submitted','{"round": 2, "seeds": [1, 2], "slot_models": ["m-beta", "m-alpha"], "slot_systems": ["beta", "alpha"], "text": "w2 line 2."}','2026-11-25T04:28:08.609Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',8,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 2.", "round": 2, "slot": 1, "system": "beta", "text": "Second says 2."}','2026-11-25T04:28:08.609Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',9,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 2.", "round": 2, "slot": 2, "system": "alpha", "text": "First says 2."}','2026-11-25T04:28:08.609Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',10,'suggestion_chosen','{"round": 2, "slot": 2, "switch": false}','2026-11-25T04:28:08.610Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',11,'turn_submitted','{"round": 2, "slot": 2, "text": "First says 2, edited."}','2026-11-25T04:28:08.610Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',12,'line_submitted','{"round": 3, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w2 line 3."}','2026-11-25T04:28:08.610Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',13,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 3.", "round": 3, "slot": 1, "system": "alpha", "text": "First says 3."}','2026-11-25T04:28:08.615Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',14,'suggestion_failed','{"attempt": 1, "error": "timeout", "model": "m-beta", "one_suggestion_only": 1, "round": 3, "slot": 2, "system": "beta"}','2026-11-25T04:28:08.615Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',15,'suggestion_chosen','{"round": 3, "slot": 1, "switch": false}','2026-11-25T04:28:08.616Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',16,'turn_submitted','{"round": 3, "slot": 1, "text": "First says 3, edited."}','2026-11-25T04:28:08.616Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',17,'line_submitted','{"round": 4, "seeds": [1, 2], "slot_models": ["m-beta", "m-alpha"], "slot_systems": ["beta", "alpha"], "text": "w2 line 4."}','2026-11-25T04:28:08.617Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',18,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 4.", "round": 4, "slot": 1, "system": "beta", "text": "Second says 4."}','2026-11-25T04:28:08.617Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',19,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 4.", "round": 4, "slot": 2, "system": "alpha", "text": "First says 4."}','2026-11-25T04:28:08.617Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',20,'suggestion_chosen','{"round": 4, "slot": 2, "switch": false}','2026-11-25T04:28:08.617Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',21,'turn_submitted','{"round": 4, "slot": 2, "text": "First says 4, edited."}','2026-11-25T04:28:08.618Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',22,'line_submitted','{"round": 5, "seeds": [1, 2], "slot_models": ["m-alpha", "m-beta"], "slot_systems": ["alpha", "beta"], "text": "w2 line 5."}','2026-11-25T04:28:08.618Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',23,'suggestion_completed','{"attempt": 1, "model": "m-alpha", "one_suggestion_only": 0, "raw_text": "First says 5.", "round": 5, "slot": 1, "system": "alpha", "text": "First says 5."}','2026-11-25T04:28:08.623Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',24,'suggestion_completed','{"attempt": 1, "model": "m-beta", "one_suggestion_only": 0, "raw_text": "Second says 5.", "round": 5, "slot": 2, "system": "beta", "text": "Second says 5."}','2026-11-25T04:28:08.623Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',25,'suggestion_chosen','{"round": 5, "slot": 1, "switch": false}','2026-11-25T04:28:08.624Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',26,'turn_submitted','{"round": 5, "slot": 1, "text": "First says 5, edited."}','2026-11-25T04:28:08.624Z',NULL);
INSERT INTO "events" VALUES('fe2bf33380869afe',27,'survey_submitted','{"happy": 4}','2026-11-25T04:28:08.624Z',NULL);
CREATE TABLE "experiments" (
   "id" TEXT PRIMARY KEY,
   "title" TEXT NOT NULL,
   "status" TEXT NOT NULL,
   "spec" TEXT NOT NULL,
   "created_at" TEXT,
   "updated_at" TEXT
);
INSERT INTO "experiments" VALUES('exp','A synthetic study','open','{"id": "exp", "rounds": 5, "systems": [{"model": "m-alpha", "name": "alpha"}, {"model": "m-beta", "name": "beta"}], "title": "A synthetic study"}','2026-11-25T04:28:08.581Z','2026-11-25T04:28:08.581Z');
CREATE TABLE "generation_claims" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "round" INTEGER,
   "slot" INTEGER,
   "attempt" INTEGER,
   "worker_id" TEXT NOT NULL,
   "claimed_at" TEXT NOT NULL,
   "heartbeat_at" TEXT NOT NULL,
   PRIMARY KEY ("session_id", "round", "slot", "attempt")
);
CREATE TABLE "participants" (
   "id" INTEGER PRIMARY KEY,
   "experiment_id" TEXT NOT NULL REFERENCES "experiments"("id"),
   "external_id" TEXT NOT NULL,
   "id_source" TEXT NOT NULL,
   "study_id" TEXT,
   "platform_session_id" TEXT,
   "created_at" TEXT
);
INSERT INTO "participants" VALUES(1,'exp','w1','pid',NULL,NULL,'2026-11-25T04:28:08.586Z');
INSERT INTO "participants" VALUES(2,'exp','w2','pid',NULL,NULL,'2026-11-25T04:28:08.604Z');
CREATE TABLE "researchers" (
   "id" INTEGER PRIMARY KEY,
   "name" TEXT NOT NULL,
   "password_hash" TEXT NOT NULL,
   "created_at" TEXT
);
CREATE TABLE "rounds" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "round" INTEGER,
   "experiment_id" TEXT,
   "participant_id" INTEGER,
   "writer_line" TEXT,
   "slot1_system" TEXT,
   "slot1_model" TEXT,
   "slot2_system" TEXT,
   "slot2_model" TEXT,
   "one_suggestion_only" INTEGER,
   "chosen_slot" INTEGER,
   "chosen_system" TEXT,
   "chosen_model" TEXT,
   "chosen_suggestion" TEXT,
   "final_text" TEXT,
   "switches" INTEGER,
   "round_started_at" TEXT,
   "line_submitted_at" TEXT,
   "suggestions_ready_at" TEXT,
   "first_choice_at" TEXT,
   "turn_submitted_at" TEXT,
   PRIMARY KEY ("session_id", "round")
);
INSERT INTO "rounds" VALUES('ec2ffc1b6c461a16',1,'exp',1,'w1 line 1.','alpha','m-alpha','beta','m-beta',0,1,'alpha','m-alpha','First says 1.','First says 1, edited.',0,'2026-11-25T04:28:08.586Z','2026-11-25T04:28:08.587Z','2026-11-25T04:28:08.588Z','2026-11-25T04:28:08.589Z','2026-11-25T04:28:08.589Z');
INSERT INTO "rounds" VALUES('ec2ffc1b6c461a16',2,'exp',1,'w1 line 2.','beta','m-beta','alpha','m-alpha',0,2,'alpha','m-alpha','First says 2.','First says 2, edited.',0,'2026-11-25T04:28:08.589Z','2026-11-25T04:28:08.590Z','2026-11-25T04:28:08.590Z','2026-11-25T04:28:08.595Z','2026-11-25T04:28:08.595Z');
INSERT INTO "rounds" VALUES('ec2ffc1b6c461a16',3,'exp',1,'w1 line 3.','alpha','m-alpha','beta','m-beta',1,1,'alpha','m-alpha','First says 3.','First says 3, edited.',0,'2026-11-25T04:28:08.595Z','2026-11-25T04:28:08.596Z','2026-11-25T04:28:08.596Z','2026-11-25T04:28:08.597Z','2026-11-25T04:28:08.597Z');
INSERT INTO "rounds" VALUES('ec2ffc1b6c461a16',4,'exp',1,'w1 line 4.','beta','m-beta','alpha','m-alpha',0,2,'alpha','m-alpha','First says 4.','First says 4, edited.',0,'2026-11-25T04:28:08.597Z','2026-11-25T04:28:08.597Z','2026-11-25T04:28:08.598Z','2026-11-25T04:28:08.598Z','2026-11-25T04:28:08.600Z');
INSERT INTO "rounds" VALUES('ec2ffc1b6c461a16',5,'exp',1,'w1 line 5.','alpha','m-alpha','beta','m-beta',0,1,'alpha','m-alpha','First says 5.','First says 5, edited.',0,'2026-11-25T04:28:08.600Z','2026-11-25T04:28:08.601Z','2026-11-25T04:28:08.601Z','2026-11-25T04:28:08.602Z','2026-11-25T04:28:08.602Z');
INSERT INTO "rounds" VALUES('fe2bf33380869afe',1,'exp',2,'w2 line 1.','alpha','m-alpha','beta','m-beta',0,1,'alpha','m-alpha','First says 1.','First says 1, edited.',0,'2026-11-25T04:28:08.604Z','2026-11-25T04:28:08.607Z','2026-11-25T04:28:08.607Z','2026-11-25T04:28:08.608Z','2026-11-25T04:28:08.608Z');
INSERT INTO "rounds" VALUES('fe2bf33380869afe',2,'exp',2,'w2 line 2.','beta','m-beta','alpha','m-alpha',0,2,'alpha','m-alpha','First says 2.','First says 2, edited.',0,'2026-11-25T04:28:08.608Z','2026-11-25T04:28:08.609Z','2026-11-25T04:28:08.609Z','2026-11-25T04:28:08.610Z','2026-11-25T04:28:08.610Z');
INSERT INTO "rounds" VALUES('fe2bf33380869afe',3,'exp',2,'w2 line 3.','alpha','m-alpha','beta','m-beta',1,1,'alpha','m-alpha','First says 3.','First says 3, edited.',0,'2026-11-25T04:28:08.610Z','2026-11-25T04:28:08.610Z','2026-11-25T04:28:08.615Z','2026-11-25T04:28:08.616Z','2026-11-25T04:28:08.616Z');
INSERT INTO "rounds" VALUES('fe2bf33380869afe',4,'exp',2,'w2 line 4.','beta','m-beta','alpha','m-alpha',0,2,'alpha','m-alpha','First says 4.','First says 4, edited.',0,'2026-11-25T04:28:08.616Z','2026-11-25T04:28:08.617Z','2026-11-25T04:28:08.617Z','2026-11-25T04:28:08.617Z','2026-11-25T04:28:08.618Z');
INSERT INTO "rounds" VALUES('fe2bf33380869afe',5,'exp',2,'w2 line 5.','alpha','m-alpha','beta','m-beta',0,1,'alpha','m-alpha','First says 5.','First says 5, edited.',0,'2026-11-25T04:28:08.618Z','2026-11-25T04:28:08.618Z','2026-11-25T04:28:08.623Z','2026-11-25T04:28:08.624Z','2026-11-25T04:28:08.624Z');
CREATE TABLE "sentence_tags" (
   "tagger" TEXT,
   "sentence" TEXT,
   "nouns" TEXT NOT NULL,
   "verbs" TEXT NOT NULL,
   PRIMARY KEY ("tagger", "sentence")
);
CREATE TABLE "sessions" (
   "id" TEXT PRIMARY KEY,
   "experiment_id" TEXT NOT NULL REFERENCES "experiments"("id"),
   "participant_id" INTEGER NOT NULL REFERENCES "participants"("id"),
   "system_a" TEXT,
   "system_b" TEXT,
   "phase" TEXT NOT NULL,
   "current_round" INTEGER,
   "completion_code" TEXT NOT NULL,
   "started_at" TEXT,
   "updated_at" TEXT,
   "finished_at" TEXT,
   "user_agent" TEXT
);
INSERT INTO "sessions" VALUES('ec2ffc1b6c461a16','exp',1,'alpha','beta','done',5,'dcf096ce7396','2026-11-25T04:28:08.586Z','2026-11-25T04:28:08.602Z','2026-11-25T04:28:08.602Z','test');
INSERT INTO "sessions" VALUES('fe2bf33380869afe','exp',2,'alpha','beta','done',5,'ea55dc087b50','2026-11-25T04:28:08.604Z','2026-11-25T04:28:08.624Z','2026-11-25T04:28:08.624Z','test');
CREATE TABLE "suggestions" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "round" INTEGER,
   "slot" INTEGER,
   "attempt" INTEGER,
   "system" TEXT,
   "model" TEXT,
   "model_version" TEXT,
   "weights_file" TEXT,
   "sampling" TEXT,
   "seed" INTEGER,
   "status" TEXT,
   "text" TEXT,
   "raw_text" TEXT,
   "error" TEXT,
   "generation_seconds" REAL,
   "first_token_seconds" REAL,
   "token_count" INTEGER,
   "created_at" TEXT,
   PRIMARY KEY ("session_id", "round", "slot", "attempt")
);
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',1,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 1.','First says 1.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.588Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',1,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 1.','Second says 1.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.588Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',2,1,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 2.','Second says 2.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.590Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',2,2,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 2.','First says 2.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.590Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',3,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 3.','First says 3.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.596Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',3,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'failed',NULL,NULL,'timeout',NULL,NULL,NULL,'2026-11-25T04:28:08.596Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',4,1,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 4.','Second says 4.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.598Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',4,2,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 4.','First says 4.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.598Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',5,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 5.','First says 5.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.601Z');
INSERT INTO "suggestions" VALUES('ec2ffc1b6c461a16',5,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 5.','Second says 5.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.601Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',1,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 1.','First says 1.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.607Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',1,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 1.','Second says 1.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.607Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',2,1,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 2.','Second says 2.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.609Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',2,2,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 2.','First says 2.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.609Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',3,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 3.','First says 3.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.615Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',3,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'failed',NULL,NULL,'timeout',NULL,NULL,NULL,'2026-11-25T04:28:08.615Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',4,1,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 4.','Second says 4.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.617Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',4,2,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 4.','First says 4.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.617Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',5,1,1,'alpha','m-alpha',NULL,NULL,'{}',NULL,'done','First says 5.','First says 5.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.623Z');
INSERT INTO "suggestions" VALUES('fe2bf33380869afe',5,2,1,'beta','m-beta',NULL,NULL,'{}',NULL,'done','Second says 5.','Second says 5.',NULL,NULL,NULL,NULL,'2026-11-25T04:28:08.623Z');
CREATE TABLE "survey_answers" (
   "session_id" TEXT REFERENCES "sessions"("id"),
   "item_id" TEXT,
   "kind" TEXT,
   "question" TEXT,
   "value" INTEGER,
   "label" TEXT,
   "text" TEXT,
   "answered_at" TEXT,
   PRIMARY KEY ("session_id", "item_id")
);
INSERT INTO "survey_answers" VALUES('ec2ffc1b6c461a16','happy','likert','I''m happy with my final story.',4,'Agree',NULL,'2026-11-25T04:28:08.602Z');
INSERT INTO "survey_answers" VALUES('fe2bf33380869afe','happy','likert','I''m happy with my final story.',4,'Agree',NULL,'2026-11-25T04:28:08.624Z');
CREATE UNIQUE INDEX "idx_participants_experiment_id_external_id"
    ON "participants" ("experiment_id", "external_id");
CREATE UNIQUE INDEX "idx_sessions_completion_code"
    ON "sessions" ("completion_code");
CREATE UNIQUE INDEX idx_events_client_action ON events (session_id, client_action_id) WHERE client_action_id IS NOT NULL;
CREATE UNIQUE INDEX "idx_researchers_name"
    ON "researchers" ("name");
COMMIT;
